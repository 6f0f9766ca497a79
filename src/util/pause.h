// kbv's own background work, stopped while kbv times on the CPU.
//
// On the CPU device the build queue (compile/queue.h) compiles the next candidates while this one
// is evaluated, on the same cores the timing then measures: the compilers' load slowed ATen's
// parallel regions and the candidate's loop alike (docs/TIMING.md, "kbv's own builds"). A
// registered process is stopped while any PauseHold of this process lives, and continued when the
// last one ends.
#pragma once

#include <cstdint>
#include <string>

namespace kbv {

// A process of kbv's own background work (a build worker, the precompile of a header), with its
// process group, their descendants and its PID namespace (empty: none), as stop_processes takes
// them (util/subprocess.h; strays left alone). Registered for the object's life: made right after
// the process started, ended before it is killed and reaped. A registration made while a hold
// lives stops the process at once; one that ends while stopped continues it first.
class PausableProcess {
 public:
  explicit PausableProcess(int pid, const std::string& pid_ns = "");
  ~PausableProcess();
  PausableProcess(const PausableProcess&) = delete;
  PausableProcess& operator=(const PausableProcess&) = delete;

 private:
  uint64_t id_ = 0;
};

// While any hold lives, every PausableProcess is stopped (holds nest: several evaluations of one
// kbv may time at once). stopped(): how many registered processes were stopped since this hold
// began, those registered meanwhile included; what the record says (timing.builds_stopped).
class PauseHold {
 public:
  PauseHold();
  ~PauseHold();
  PauseHold(const PauseHold&) = delete;
  PauseHold& operator=(const PauseHold&) = delete;
  int stopped() const;

 private:
  uint64_t stops_at_start_ = 0;
};

}  // namespace kbv
