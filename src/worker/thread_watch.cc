// Threads of this process, for the runtime audit (worker/audit.cc): which exist, and what the
// new ones do while they are watched.
#include "worker/thread_watch.h"

#include <dirent.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

using nlohmann::json;

namespace kbv::audit {

// ---------------------------------------------------------------------------------------------
// Threads of this process.
std::set<int> thread_ids() {
  std::set<int> ids;
  DIR* d = opendir("/proc/self/task");
  if (!d) return ids;
  while (dirent* e = readdir(d)) {
    int id = std::atoi(e->d_name);
    if (id > 0) ids.insert(id);
  }
  closedir(d);
  return ids;
}

namespace {

std::string read_small(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// State letter (R, S, D, ...) of a thread, "" when it is gone.
std::string thread_state(int tid) {
  std::string stat = read_small(fmt::format("/proc/self/task/{}/stat", tid));
  size_t p = stat.rfind(')');
  if (p == std::string::npos || p + 2 >= stat.size()) return "";
  return std::string(1, stat[p + 2]);
}

// CPU time of a thread of this process (its per-thread CPU clock); negative when it is gone.
double thread_cpu_ms(int tid) {
  clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);  // CPUCLOCK_SCHED | PERTHREAD
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

// Threads in `after` and not in `before`, watched for `window_ms`: state right away, CPU time used
// during the window, whether they exited.
json watch_new_threads(const std::set<int>& before, double window_ms) {
  json out = json::array();
  std::vector<int> fresh;
  for (int tid : thread_ids())
    if (!before.count(tid)) fresh.push_back(tid);
  if (fresh.empty()) return out;
  struct Seen {
    int tid;
    std::string name, state;
    double cpu0, cpu_last;
    bool exited = false;
    bool ran = false;
  };
  std::vector<Seen> seen;
  for (int tid : fresh) {
    Seen s{tid, read_small(fmt::format("/proc/self/task/{}/comm", tid)), thread_state(tid), thread_cpu_ms(tid), 0};
    while (!s.name.empty() && s.name.back() == '\n') s.name.pop_back();
    s.cpu_last = s.cpu0;
    if (s.state.empty() || s.cpu0 < 0) s.exited = true;
    if (s.state == "R") s.ran = true;
    seen.push_back(s);
  }
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < window_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    bool any = false;
    for (auto& s : seen) {
      if (s.exited) continue;
      double c = thread_cpu_ms(s.tid);
      if (c < 0) {
        s.exited = true;
        continue;
      }
      s.cpu_last = c;
      any = true;
    }
    if (!any) break;
  }
  for (const auto& s : seen)
    out.push_back({{"tid", s.tid},
                   {"name", s.name},
                   {"state", s.state.empty() ? "gone" : s.state},
                   {"cpu_ms_after", s.cpu0 < 0 ? 0.0 : s.cpu_last - s.cpu0},
                   {"exited", s.exited},
                   {"window_ms", window_ms}});
  return out;
}

}  // namespace kbv::audit
