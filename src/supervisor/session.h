// One worker process seen from the supervisor: start, request/reply with a deadline, stop.
// A worker that dies, hangs or garbles its channel becomes a Reply status, never an exception.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "record/decide.h"
#include "sandbox/sandbox.h"
#include "supervisor/write_watch.h"
#include "util/subprocess.h"

namespace kbv {

// glibc's malloc parameters in every worker, fixed: trimming at 1 GiB of free heap top and mmap
// from 32 MiB (glibc's largest threshold), so neither adapts to the process's history.
inline constexpr char kWorkerMallocTunables[] =
    "glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=33554432";

struct WorkerConfig {
  std::string python;                       // interpreter with torch 2.11
  std::filesystem::path worker_dir;         // folder holding the kbv_worker extension module
  std::filesystem::path log_dir;            // worker logs (stdout+stderr of the hosted code)
  std::map<std::string, std::string> env;   // extra environment for every worker
  sandbox::Mode sandbox = sandbox::Mode::off;  // kbv eval/selftest: --sandbox (strict by default)
  std::filesystem::path scratch_dir;        // per-worker scratch folders (empty: log_dir/../scratch)
  int warm_workers = 0;  // --warm-workers: pre-started candidate workers kept ready (supervisor/warm_pool.h)
  // --write-cap-mib: what a confined candidate's files may hold at once (supervisor/write_watch.h); 0: unwatched.
  uint64_t write_cap_bytes = kDefaultWriteCapBytes;
  // Workers forked by a zygote that imported torch once (supervisor/zygote.h); false: each exec'd.
  bool zygote = true;
};

class WorkerProcess;
// What a sandboxed worker reads besides the system and Python, and whom it works with.
struct WorkerTarget {
  std::filesystem::path solution;              // candidate and build: the solution file (read-only)
  const WorkerProcess* reference = nullptr;    // candidate: its reference (their shared /dev/shm folder)
  std::vector<std::filesystem::path> read;     // more folders it reads (a build's precompiled headers)
  // A pre-started candidate (supervisor/warm_pool.h): no solution yet, and its build folder
  // (/tmp/kbv-ext) is a folder of its own scratch, filled when it is handed its candidate.
  bool warm = false;
  // The evaluation's CPU thread budget (every worker of one evaluation starts alike, and from one
  // zygote): OMP_NUM_THREADS and MKL_NUM_THREADS, and a zygote on that many CPUs, which OpenMP
  // counts as torch loads. 0: none, the variables as kbv's.
  int threads = 0;
  // CPUs it is pinned to before it starts (spawn's SpawnOptions::cpus): a candidate's OpenMP counts
  // the CPUs it may use when it loads. Empty: kbv's own.
  std::vector<int> start_cpus = {};
};

// Finds the python and the worker module: --python / KBV_PYTHON / the build's default;
// the folder of the kbv executable / KBV_WORKER_DIR / the build folder.
WorkerConfig default_worker_config(const std::string& python_flag);

struct Reply {
  enum class Status { ok, failed, timeout, died, channel_error } status = Status::channel_error;
  nlohmann::json body;   // the worker's reply (ok or failed)
  std::string detail;    // timeout/died/channel_error: what happened, with the log's tail
};

// The body of an ok reply read into a message struct (proto/messages.h). A body that does not
// parse turns `r` into a failed reply (kind protocol_error, saying what was wrong) and gives nullopt,
// as does a reply that was not ok.
template <class T> std::optional<T> reply_as(Reply& r) {
  if (r.status != Reply::Status::ok) return std::nullopt;
  T out{};
  if (std::string e = msg::from_json(r.body, out); !e.empty()) {
    r.status = Reply::Status::failed;
    r.body = msg::to_json(msg::Failure{"protocol_error", "a malformed reply from the worker: " + e, ""});
    return std::nullopt;
  }
  return out;
}

// A reply that is not ok, as the record's verdict rules see it (record/decide.h).
WorkerFailure worker_failure(const Reply& reply);

class WorkerProcess {
 public:
  // role: reference | candidate | build. Returns nullptr and sets error if it cannot start.
  // Under config.sandbox (src/sandbox, DESIGN.md "Sandbox") the candidate and build workers are
  // confined and the reference gets a /dev/shm folder of its own; what took effect is checked from
  // outside (sandbox_record()), and under strict a layer that did not is an error.
  static std::unique_ptr<WorkerProcess> start(const std::string& role, const WorkerConfig& config,
                                              const std::map<std::string, std::string>& env, std::string& error,
                                              const WorkerTarget& target = {});
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
  // Stops the worker, its process group, their descendants, what it left in its PID namespace and
  // the strays kbv adopted (util/subprocess.h, stop_processes) until thaw(): none of it runs while
  // a baseline is timed beside a live candidate (paired timing, T17). Returns how many processes
  // were stopped (0: the worker is gone).
  int freeze();
  void thaw();
  bool alive() const { return pid_ > 0; }
  int pid() const { return pid_; }
  // The process that runs the worker's program: pid() itself, or its child inside a PID namespace.
  int program_pid() const { return program_pid_; }
  const std::filesystem::path& log_path() const { return log_path_; }
  // Its PID namespace as /proc/<pid>/ns/pid reads (confined workers; empty otherwise).
  const std::string& pid_namespace() const { return pid_ns_; }
  // The record's `sandbox` field: {"mode", "layers": {layer: "applied" | "unavailable: why" | ...}}.
  const nlohmann::json& sandbox_record() const { return sandbox_; }
  // The /dev/shm folder a sandboxed reference shares with its candidates (empty: the host's).
  const std::filesystem::path& shm_dir() const { return shm_dir_; }
  // The host folder bound on its /tmp (confined workers only; empty otherwise).
  const std::filesystem::path& scratch() const { return scratch_; }
  // A pre-started candidate (WorkerTarget::warm) handed its build: the extension folders of
  // `extensions_dir` copied into its own /tmp/kbv-ext, modification times kept (torch's up-to-date
  // check holds), torch's lock files left out. "" or why not.
  std::string hand_build(const std::filesystem::path& extensions_dir);
  // CPU thread parity (docs/TIMING.md): every thread of the worker's process group pinned to
  // `cpus` (threads it starts later inherit it). Empty when done, else why not. cpus() is the set
  // kbv pinned it to (empty: never pinned, kbv's own affinity).
  std::string pin_cpus(const std::vector<int>& cpus);
  const std::vector<int>& cpus() const { return cpus_; }
  // Why kbv killed a confined candidate for what its files held (supervisor/write_watch.h), or "".
  const std::string& write_cap_tripped() const { return write_tripped_; }
  // Every thread of the group back on kbv's own affinity set, cpus() empty again (a pre-started
  // candidate that started on a CPU of its own, handed to its candidate). "" or why not.
  std::string unpin_cpus();

 private:
  WorkerProcess() = default;
  std::string died_detail();
  // The worker has ended or been killed: its group and its strays are killed, the worker forgotten.
  void end_group();
  int pid_ = -1;
  int program_pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string role_;
  std::filesystem::path log_path_;
  std::vector<Stray> strays_;
  std::vector<int> frozen_;  // stopped by freeze(), continued by thaw()
  std::string ended_;  // why the worker is gone, for requests made after (empty while it runs)
  // Sandbox: the check's outcome, the worker's PID namespace, its scratch, its /dev/shm folder
  // (removed at the end when owned), and the prefix of the reference's files kept in a shared one.
  nlohmann::json sandbox_;
  std::string pid_ns_;
  std::filesystem::path scratch_, shm_dir_;
  std::filesystem::path ext_dir_;  // a confined worker's build folder bound on /tmp/kbv-ext (not in its scratch)
  std::set<std::string> ext_before_;  // its entries when the worker started: the rest is removed at its end
  bool owns_shm_ = false;
  int shm_owner_ = 0;  // a candidate sharing its reference's shm folder: the reference's pid
  bool sweeps_shared_shm_ = true;  // false for a pre-started candidate until hand_build()
  std::vector<int> cpus_;
  std::unique_ptr<WriteWatch> watch_;  // a confined candidate's files, under --write-cap-mib
  std::string write_tripped_;
  void stop_watch();
  void note_namespace_strays();
  void remove_sandbox_files();
};

}  // namespace kbv
