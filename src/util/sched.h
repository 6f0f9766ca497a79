// The CPU scheduling of another process's threads against this process's own: affinity, nice
// value and policy. A candidate that could reach the reference worker (T21: `--sandbox off` or a
// layer missing) can pin its threads to one CPU, renice them or move them to SCHED_IDLE, and the
// baseline then crawls with nothing left running for the process-group kill or the stray sweep to
// find. Checked, and put back, before baselines are timed.
#pragma once
#include <string>
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
// differs (or `pid` is gone).
std::vector<SchedulingDrift> restore_scheduling(int pid);

}  // namespace kbv
