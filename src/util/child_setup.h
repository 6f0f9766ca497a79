// A child's set-up between fork and the program: its process group and signals, descriptors 0-5,
// the sandbox's layers (src/sandbox), its folder. Shared by spawn() (then exec) and the worker
// zygote's forks (worker/zygote.cc: then kbv_worker.serve in the same process, no exec).
// After fork only async-signal-safe calls: the parent may have had threads.
#pragma once
#include <sched.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

namespace kbv::child_setup {

// What a child reports through its report pipe (fd 5 once set up): a set-up failure, or (kLayers,
// not a failure) which sandbox layers it applied, or (kPid, from a zygote) the pid of the process
// that becomes the child, in `err`.
enum class ChildStage : int { kSetup = 1, kChdir = 2, kExec = 3, kSandbox = 4, kLayers = 5, kPid = 6 };
struct ChildReport {
  int stage;
  int err;
  int layer;
  int layers[sandbox::kLayerCount];
};

// Writes the failure to `report_fd` and ends the process (127). err < 0: errno.
[[noreturn]] void child_fail(int report_fd, ChildStage stage, int err = -1, int layer = -1);

// The descriptors a child starts from, at whatever numbers: they end at 0 (null_fd), 1 and 2
// (out_fd), 3 and 4 (in_read, out_write: the protocol pipes, or a zygote's socket at 3; -1: that
// one closed) and 5 (report, close-on-exec). Every other descriptor is closed.
struct ChildFds {
  int null_fd = -1, out_fd = -1, in_read = -1, out_write = -1, report = -1;
};

// In the child: a process group of its own, killed with its parent (`parent`: the process that
// must be its parent now; otherwise it ends at once), SIGPIPE default and no signal blocked, the
// descriptors in place, pinned to `cpus` (null: as it is), the sandbox (`plan`, may be null), the
// folder (`cwd`, "" to keep). Returns in the process that is to run the program; a failure is
// reported on fd 5 and ends it.
void setup_child(const ChildFds& fds, pid_t parent, const cpu_set_t* cpus, const sandbox::Plan* plan, const char* cwd,
                 int max_fd);

}  // namespace kbv::child_setup
