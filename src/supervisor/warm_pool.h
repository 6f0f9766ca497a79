// Warm candidate workers (DESIGN.md, "Warm workers"; --warm-workers N): candidate worker processes
// started ahead (Python, torch and kbv_worker imported, no CUDA context), each handed exactly one
// candidate and then discarded like any other. A pool belongs to one reference worker (its
// candidates share its /dev/shm folder, bound when they start) and one environment (the build's
// variables and read folders, also fixed at start); the build folder, which differs per candidate,
// is copied into the worker's own /tmp/kbv-ext when it is handed over, and the solution travels as
// text in the load message as it always does. The pool refills as it hands a worker out, so the
// replacement imports torch while the candidate loads and is checked; settle() (before the runtime
// audit, the memory phase and the timing) waits until every held worker answers a ping, so none is
// still starting while a candidate is measured. Where the host has cores to spare
// (kMinCpusBeside), a replacement starts on a CPU of its own instead (a CpuLease of one CPU no
// other kbv evaluation holds, its group pinned there): settle() does not wait for it, and it is
// unpinned when it is handed its candidate (docs/results/2026-12-06-gpu.md: on 16 idle cores the
// wait was ~1 s of a 1.7 s sample).
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/session.h"
#include "util/sched.h"

namespace kbv {

// --warm-workers when not given (docs/results/2026-12-05-warm.md).
inline constexpr int kDefaultWarmWorkers = 1;
// A replacement starts on a CPU of its own only on a host with at least this many CPUs in kbv's
// affinity set (on fewer, taking one would leave concurrent evaluations sharing theirs);
// KBV_WARM_BESIDE_MIN_CPUS sets another number (the tests, a measurement on a small host).
inline constexpr int kMinCpusBeside = 4;

// "" when pre-started candidate workers keep every layer of `config`'s sandbox, else why the pool
// is off: under --sandbox off every worker runs as the same user and could signal, trace or write
// the memory of a process waiting for the next candidate; under best-effort the same when a layer
// that keeps them apart (PID namespace, seccomp, Landlock, mount namespace, ...) is unavailable.
std::string warm_pool_off_reason(const WorkerConfig& config);

class WarmPool {
 public:
  using Env = std::map<std::string, std::string>;
  WarmPool() = default;
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;
  ~WarmPool() { clear(); }

  // The candidate worker for `target` (its reference, its build's read folders) with `env` (whose
  // TORCH_EXTENSIONS_DIR is the build folder): a held worker started for the same reference and
  // environment, once every held worker answered a ping within `ready`, handed the build; else a
  // fresh one (WorkerProcess::start). `warm` says which. Then starts the replacements (refill()).
  std::unique_ptr<WorkerProcess> take(const WorkerConfig& config, const Env& env, const WorkerTarget& target,
                                      std::chrono::milliseconds ready, bool& warm, std::string& error);
  // Starts workers until config.warm_workers are held for the last take's reference and
  // environment. Nothing when the pool is off or was cleared since.
  void refill();
  // Waits until every held worker answers a ping within `ready` (one that does not is stopped);
  // one starting on a CPU of its own only when `all` (take() hands out only a worker that answered).
  void settle(std::chrono::milliseconds ready, bool all = false);
  // Whether the next candidate is likely to have the same reference (a run folder's next sample is
  // of the same problem; a queue's next job is not known: yes). take() refills only then, so that a
  // run of one sample per problem starts no worker that nothing would use.
  void expect_next(bool same_reference) { expect_next_ = same_reference; }
  // Stops every held worker and forgets the reference (it is about to go).
  void clear();

  struct Held {
    int pid = 0;
    std::chrono::steady_clock::time_point started;
    std::vector<int> beside;  // the CPU it starts on, leased for it; empty: settle() waits for it
  };
  std::vector<Held> held() const;

 private:
  // warm_pool_off_reason(config), decided once per pool (under best-effort it probes the sandbox's
  // layers, which do not change while kbv runs); again only for another mode or pool size.
  const std::string& off_reason(const WorkerConfig& config);
  std::optional<std::pair<std::pair<sandbox::Mode, int>, std::string>> off_;
  struct Slot {
    std::unique_ptr<WorkerProcess> worker;
    std::chrono::steady_clock::time_point started;
    std::unique_ptr<CpuLease> beside;  // the CPU of its own it starts on (kMinCpusBeside), or none
  };
  std::vector<Slot> slots_;
  bool expect_next_ = true;
  // What refill() starts: the last take's, when the pool was on for it.
  std::string key_;
  WorkerConfig config_;
  Env env_;
  const WorkerProcess* reference_ = nullptr;
  std::vector<std::filesystem::path> read_;
  int threads_ = 0;  // the thread budget of its workers (WorkerTarget::threads)
};

}  // namespace kbv
