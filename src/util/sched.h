// The CPU scheduling of another process's threads against this process's own: affinity, nice
// value and policy. A candidate that could reach the reference worker (T21: `--sandbox off` or a
// layer missing) can pin its threads to one CPU, renice them or move them to SCHED_IDLE, and the
// baseline then crawls with nothing left running for the process-group kill or the stray sweep to
// find. Checked, and put back, before baselines are timed.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kbv {

struct SchedulingDrift {
  int tid = -1;
  std::string what;       // "affinity 0 (expected 0-15)", "nice 19 (expected 0)", "policy SCHED_IDLE (expected SCHED_OTHER)"
  bool restored = false;  // set back to this process's own
  std::string error;      // when not restored, why
};

// Every thread of `pid` whose affinity, nice value or scheduling policy differs from this
// process's, each set back to this process's own where the kernel allows. Empty when nothing
// differs (or `pid` is gone). `expected_cpus`, when given and not empty, is the affinity expected
// instead of this process's own (a worker kbv pinned to the CPU thread budget).
std::vector<SchedulingDrift> restore_scheduling(int pid, const std::vector<int>* expected_cpus = nullptr);

// The CPU thread budget of a timed run (TimingProtocol::cpu_threads, docs/TIMING.md "Thread
// parity"): the candidate's and the baselines' workers are pinned to the same `cpus` and run
// `threads` intra-op threads.
struct CpuBudget {
  int threads = 0;
  std::vector<int> cpus;
};
// `threads` CPUs of `allowed` (0, or more than there are: all of them), the highest-numbered ones
// (CPU 0 takes most of a host's interrupts and housekeeping). Pure, for the tests.
CpuBudget pick_cpu_budget(const std::vector<int>& allowed, int threads);
// The same over this process's own affinity set.
CpuBudget cpu_budget(int threads);

// The CPUs one pair's workers run on, leased host-wide: kbv evaluations running at once on one
// host (ctest -j, --jobs, several `kbv eval`s, `kbv worker`s) would otherwise all pin their
// workers to the same highest-numbered CPUs and time each other. Each CPU of this process's
// affinity set has a lock file (`dir`/cpu<N>.lock, flock): the lease takes the highest-numbered
// free ones; when fewer are free than wanted it adds the highest-numbered others, shared, and
// says so. Released on destruction, and by the kernel if kbv dies. A candidate that could take
// the locks (--sandbox off) only makes evaluations share CPUs: both sides of a pair stay on one set.
class CpuLease {
 public:
  explicit CpuLease(int threads, const std::string& dir = default_lock_dir());
  ~CpuLease();
  CpuLease(const CpuLease&) = delete;
  CpuLease& operator=(const CpuLease&) = delete;
  const CpuBudget& budget() const { return budget_; }
  int shared() const { return shared_; }  // CPUs of the budget another evaluation also holds
  static std::string default_lock_dir();  // /tmp/kbv-cpu-locks-<uid>
 private:
  CpuBudget budget_;
  std::vector<int> fds_;
  int shared_ = 0;
};
// The CPUs of `cpus` no kbv evaluation of this host holds a lease on now: their lock file in `dir`
// absent or not flock-ed, read from /proc/locks without touching the locks (a lease taken a moment
// later is not seen). Empty when /proc/locks cannot be read.
std::vector<int> unleased_cpus(const std::vector<int>& cpus, const std::string& dir = CpuLease::default_lock_dir());
// The files flock-ed in a /proc/locks text, as (device "maj:min" in hex, inode). Pure, for the tests.
std::vector<std::pair<std::string, uint64_t>> flocked_files(const std::string& proc_locks);
// "0-3,6": the kernel's list format.
std::string cpu_list_text(const std::vector<int>& cpus);
// The CPUs in the affinity set of thread `tid` (0: the caller); empty when unreadable.
std::vector<int> affinity_of(int tid);

// The processes whose process group is `group` (a worker's: the relay, the PID namespace's init
// and the worker itself under the sandbox), from /proc.
std::vector<int> group_members(int group);
// Every thread of every process of `group` pinned to `cpus`. Threads created later inherit the
// affinity of the thread that creates them. Empty when done, else what failed (the first error).
std::string pin_group(int group, const std::vector<int>& cpus);
// The threads of `group` whose affinity is not `cpus` (a candidate that widened its own affinity
// to spread its work over more cores than the baselines had). Not set back: the caller judges.
std::vector<SchedulingDrift> affinity_outside(int group, const std::vector<int>& cpus);

}  // namespace kbv
