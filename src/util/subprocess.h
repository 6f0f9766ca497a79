// Child processes for workers and builds: own process group, pipes for the
// protocol, stdout+stderr to a log file, deadlines, a kill that takes the
// whole group (a candidate's own children included), and a sweep for what
// left the group.
#pragma once
#include <cstdint>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"
#include "util/log_pump.h"

namespace kbv {

struct SpawnOptions {
  std::vector<std::string> argv;                  // argv[0] is looked up in PATH if not absolute
  std::map<std::string, std::string> env_set;     // added to / overriding the inherited environment
  std::vector<std::string> env_unset;             // removed from the inherited environment
  std::filesystem::path log_path;                 // stdout and stderr of the child go here (appended); empty: /dev/null
  std::optional<LogCap> log_cap;                  // bound the log (through a pipe and util/log_pump.h); none: the file itself
  std::filesystem::path cwd;                      // empty: inherit
  bool protocol_pipes = true;                     // create the two pipes below (child fds 3 = in, 4 = out)
  // Applied between fork and exec (src/sandbox). With a PID namespace the child forks twice: the
  // pid returned is a relay in kbv's namespace (it ends as the worker ends, with its status), its
  // child the namespace's init (it reaps; when it ends the kernel kills everything in the
  // namespace), and the init's child runs the program. All three are in the child's process group.
  const sandbox::Plan* sandbox = nullptr;
  // With protocol_pipes false: a descriptor of the caller's that becomes the child's fd 3 (the
  // worker zygote's socket, supervisor/zygote.h). -1: none.
  int control_fd = -1;
  // Non-empty: the child is pinned to these CPUs before exec, so what the program loads sees them
  // (OpenMP counts the CPUs it may use when it loads).
  std::vector<int> cpus;
};

struct Child {
  int pid = -1;
  int to_child = -1;    // parent writes here; the child reads fd 3
  int from_child = -1;  // parent reads here; the child writes fd 4
  sandbox::ChildLayers layers;  // with a sandbox: what the child applied (errno per layer)
  int program_pid = -1;         // the process that runs the program (differs from pid in a PID namespace)
};

// Starts a child in a new process group (setpgid(0,0)). Returns std::nullopt and sets
// `error` when fork/exec set-up fails (exec failure of argv[0] is reported, not a silent exit).
std::optional<Child> spawn(const SpawnOptions& options, std::string& error);

// The same child made by the worker zygote on `zygote_socket` (supervisor/zygote.h) instead of fork and
// exec: the zygote forks, the fork serves as a worker with the options' environment,
// folder, descriptors and sandbox. `zygote_failed`: the zygote itself did not answer (gone, or
// could not fork, or `request` gave ""); the caller may start the child the usual way.
// `request` makes what the fork reads on its request socket from its whole environment (the
// supervisor's msg::ForkRequest; util does not know the message); "": it cannot be written.
using ForkRequestText = std::function<std::string(const std::vector<std::string>& env)>;
std::optional<Child> spawn_forked(const SpawnOptions& options, int zygote_socket, const ForkRequestText& request,
                                  bool& zygote_failed, std::string& error);

// How a child ended, in words a user can act on.
struct ExitStatus {
  bool exited = false;      // normal exit
  int code = 0;             // exit code when exited
  bool signaled = false;
  int signal = 0;
  uint64_t max_rss_bytes = 0;  // peak resident memory of the child (and its reaped descendants); 0: not known
  // "exited with code 3", "killed by signal 11 (SIGSEGV)"; a SIGKILL nobody in kbv sent says the
  // child's peak memory against this machine's, and "most likely killed for memory" near it.
  std::string describe() const;
};

// The memory this process may use: MemTotal, or its cgroup's memory.max when lower. 0: unknown.
uint64_t machine_memory_bytes();

// Non-blocking check; std::nullopt while the child runs.
std::optional<ExitStatus> try_wait(int pid);
// Waits up to `timeout` for the child to end; std::nullopt if it did not.
std::optional<ExitStatus> wait_for(int pid, std::chrono::milliseconds timeout);
// SIGKILL to the whole process group, then reaps the child. Closes nothing.
ExitStatus kill_group(int pid);

// A process that left its worker's process group (setsid, a double fork) and was found by
// kill_strays.
struct Stray {
  int pid = -1;
  std::string command;  // its command line (or name), at most ~120 characters
};
// Kills and reaps every child of this process that spawn() did not start, with everything under
// each. spawn() makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER), so
// a process that escaped its worker's group is adopted here once its parent has gone, instead of
// by init, and this finds it. First waits, up to `settle`, for the members of process group
// `group` to end (a worker's group just killed: an orphan is adopted only when its parent has
// exited); group <= 0: no wait. Returns the live strays it killed (zombies are only reaped).
// Every child of this process must come from spawn(): any other is a stray.
std::vector<Stray> kill_strays(int group, std::chrono::milliseconds settle = std::chrono::milliseconds(2000));

// The processes of PID namespace `pid_ns` (as /proc/<pid>/ns/pid reads, "pid:[4026532...]") that are
// not in process group `group`: what a sandboxed worker left outside its group, found before the
// namespace ends (the kernel kills them with it, so kill_strays never sees them).
std::vector<Stray> namespace_strays(int group, const std::string& pid_ns);

// Stops (SIGSTOP, which cannot be caught or ignored) every live process of group `group`, every
// descendant of those, the processes of PID namespace `pid_ns` (empty: none) and every child of
// this process that spawn() did not start (strays, with their descendants), passing over /proc
// until two passes find nothing new: a process forked meanwhile is stopped in the next pass.
// Returns the processes stopped, for continue_processes. The paired timing freezes a candidate's
// worker so while a baseline is timed (docs/TIMING.md, "Paired rounds"; T17). with_strays false:
// the strays are left alone (a pause of kbv's own work, util/pause.h, is no verdict on them).
std::vector<int> stop_processes(int group, const std::string& pid_ns, bool with_strays = true);
// The live processes of group `group`, their descendants and the processes of PID namespace
// `pid_ns` (empty: none), from one pass over /proc: what a worker runs now, for a look at what it
// holds (supervisor/write_watch.h). Nothing is stopped: one forked after the pass is missed.
std::vector<int> group_processes(int group, const std::string& pid_ns);
// SIGCONT to each of `pids` and to group `group` (> 0).
void continue_processes(const std::vector<int>& pids, int group);
// The state letter of /proc/<pid>/stat ('R', 'S', 'T' for stopped, ...); '?' when unreadable.
char process_state(int pid);

// Runs a command to completion with a deadline; output (stdout+stderr) captured, at most
// `max_output` bytes kept (the tail). Used for builds and probes. pausable: kbv's own background
// work, stopped while kbv times on the CPU (util/pause.h); its deadline keeps running meanwhile.
struct RunResult {
  bool started = false;
  bool timed_out = false;
  ExitStatus status;
  std::string output;
  std::string error;  // set when it could not start
};
RunResult run_command(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env_set,
                      std::chrono::milliseconds timeout, size_t max_output = 1 << 20, bool pausable = false);

// Last `max_bytes` bytes of a log file (for error messages); empty if unreadable.
std::string tail_file(const std::filesystem::path& path, size_t max_bytes);

}  // namespace kbv
