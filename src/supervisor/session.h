// One worker process seen from the supervisor: start, request/reply with a deadline, stop.
// A worker that dies, hangs or garbles its channel becomes a Reply status, never an exception.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/decide.h"

#include "util/subprocess.h"

namespace kbv {

struct WorkerConfig {
  std::string python;                       // interpreter with torch 2.11
  std::filesystem::path worker_dir;         // folder holding the kbv_worker extension module
  std::filesystem::path log_dir;            // worker logs (stdout+stderr of the hosted code)
  std::map<std::string, std::string> env;   // extra environment for every worker
};

// Finds the python and the worker module: --python / KBV_PYTHON / the build's default;
// the folder of the kbv executable / KBV_WORKER_DIR / the build folder.
WorkerConfig default_worker_config(const std::string& python_flag);

struct Reply {
  enum class Status { ok, failed, timeout, died, channel_error } status = Status::channel_error;
  nlohmann::json body;   // the worker's reply (ok or failed)
  std::string detail;    // timeout/died/channel_error: what happened, with the log's tail
};

// A reply that is not ok, as the record's verdict rules see it (record/decide.h).
WorkerFailure worker_failure(const Reply& reply);

class WorkerProcess {
 public:
  // role: reference | candidate | build. Returns nullptr and sets error if it cannot start.
  static std::unique_ptr<WorkerProcess> start(const std::string& role, const WorkerConfig& config,
                                              const std::map<std::string, std::string>& env, std::string& error);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  Reply call(const nlohmann::json& request, std::chrono::milliseconds timeout);
  // The same, for a request during which the worker asks the supervisor for something: every
  // message from the worker with an "op" (rather than "ok") goes to `asked`, whose answer is sent
  // back, until the reply. The time spent in `asked` does not count against `timeout`. Without a
  // handler such a message is a garbled channel.
  using AskHandler = std::function<nlohmann::json(const nlohmann::json&)>;
  Reply call(const nlohmann::json& request, std::chrono::milliseconds timeout, const AskHandler& asked);
  // Asks the worker to exit, waits briefly, then kills its whole process group and whatever left
  // the group (strays()).
  void stop();
  // Processes that had left the worker's process group (setsid, a double fork) and were killed
  // when it ended or was killed: the processes a candidate left running behind kbv's back (T17).
  const std::vector<Stray>& strays() const { return strays_; }
  bool alive() const { return pid_ > 0; }
  int pid() const { return pid_; }
  const std::filesystem::path& log_path() const { return log_path_; }

 private:
  WorkerProcess() = default;
  std::string died_detail();
  // The worker has ended or been killed: its group and its strays are killed, the worker forgotten.
  void end_group();
  int pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string role_;
  std::filesystem::path log_path_;
  std::vector<Stray> strays_;
  std::string ended_;  // why the worker is gone, for requests made after (empty while it runs)
};

}  // namespace kbv
