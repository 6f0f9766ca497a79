// kbv's own background work, stopped while kbv times on the CPU (util/pause.h).
#include "util/pause.h"

#include <map>
#include <mutex>
#include <vector>

#include "util/subprocess.h"

namespace kbv {
namespace {

struct Paused {
  int pid = -1;
  std::string pid_ns;
  std::vector<int> stopped;  // by the current holds, for continue_processes
};

struct PauseRegistry {
  std::mutex mutex;
  std::map<uint64_t, Paused> entries;
  uint64_t next_id = 1;
  int holds = 0;
  uint64_t stops = 0;  // registered processes stopped, ever
};

PauseRegistry& registry() {
  static PauseRegistry r;  // made on first use; the build threads that register are joined before exit
  return r;
}

void stop_paused(PauseRegistry& r, Paused& e) {
  e.stopped = stop_processes(e.pid, e.pid_ns, /*with_strays=*/false);
  ++r.stops;
}

void resume_paused(Paused& e) {
  if (!e.stopped.empty()) continue_processes(e.stopped, e.pid);
  e.stopped.clear();
}

}  // namespace

PausableProcess::PausableProcess(int pid, const std::string& pid_ns) {
  if (pid <= 0) return;
  PauseRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  id_ = r.next_id++;
  Paused& e = r.entries[id_];
  e.pid = pid;
  e.pid_ns = pid_ns;
  if (r.holds > 0) stop_paused(r, e);
}

PausableProcess::~PausableProcess() {
  if (id_ == 0) return;
  PauseRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(id_);
  if (it == r.entries.end()) return;
  resume_paused(it->second);
  r.entries.erase(it);
}

PauseHold::PauseHold() {
  PauseRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  stops_at_start_ = r.stops;
  if (r.holds++ == 0)
    for (auto& [id, e] : r.entries) stop_paused(r, e);
}

PauseHold::~PauseHold() {
  PauseRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (--r.holds == 0)
    for (auto& [id, e] : r.entries) resume_paused(e);
}

int PauseHold::stopped() const {
  PauseRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int>(r.stops - stops_at_start_);
}

}  // namespace kbv
