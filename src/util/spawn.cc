// Child processes. Notes for callers:
// - SIGPIPE: writing to a child that has gone away raises SIGPIPE in the writer. The caller (the
//   supervisor) ignores SIGPIPE process-wide and handles EPIPE; this file changes no signal
//   disposition of the calling process. In the child, SIGPIPE is reset to its default and the
//   signal mask is cleared before exec, so children start as if from a shell.
// - SIGCHLD must not be ignored (SIG_IGN) by the caller, or waitpid cannot report exit statuses.
// - spawn() is safe to call from several threads: every fd it creates is O_CLOEXEC in the parent,
//   and the child closes everything except 0-4 before exec.
// This file: starting a child (fork, descriptors, the sandbox layers, exec) and reading what its
// set-up reported. Waiting, reaping and process groups: process_groups.cc; run to completion:
// run_command.cc.
#include "util/subprocess.h"

#include "util/child_setup.h"
#include "util/log_pump.h"
#include "util/subprocess_internal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

extern char** environ;

namespace kbv {
namespace subprocess_internal {

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace subprocess_internal

namespace {

using namespace subprocess_internal;
using child_setup::child_fail;
using child_setup::ChildReport;
using child_setup::ChildStage;

// An orphaned descendant comes to the nearest subreaper among its ancestors rather than to init,
// so what a worker's processes leave behind stays findable (kill_strays).
void become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] { ::prctl(PR_SET_CHILD_SUBREAPER, 1); });
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The environment the child gets: inherited, minus env_unset, plus env_set.
std::vector<std::string> child_environment(const SpawnOptions& options) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    std::string name = name_of(entry);
    if (options.env_set.count(name)) continue;
    if (std::find(options.env_unset.begin(), options.env_unset.end(), name) !=
        options.env_unset.end())
      continue;
    env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : options.env_set) env.push_back(name + "=" + value);
  return env;
}

// argv[0] resolved the way execvp would, but with the child's PATH and before fork (no
// allocation in the child). A name with a '/' is made absolute against the parent's folder,
// so a child `cwd` does not change which program runs. Unresolvable names are returned as
// they are: exec then fails with ENOENT and the error is reported.
std::string resolve_program(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) {
    std::error_code ec;
    auto abs = std::filesystem::absolute(name, ec);
    return ec ? name : abs.string();
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  size_t start = 0;
  for (;;) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return name;
}

// What the child runs, built before fork: after fork only async-signal-safe calls.
struct ExecPlan {
  std::vector<std::string> env;
  std::string program;
  std::vector<char*> argv_ptrs, env_ptrs;
  std::string cwd;
  int max_fd = 65536;
  cpu_set_t cpus;
  bool pin = false;
};
void plan_exec(const SpawnOptions& options, ExecPlan& plan) {
  plan.env = child_environment(options);
  plan.program = resolve_program(options.argv[0], plan.env);
  for (const auto& a : options.argv) plan.argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  plan.argv_ptrs.push_back(nullptr);
  for (const auto& e : plan.env) plan.env_ptrs.push_back(const_cast<char*>(e.c_str()));
  plan.env_ptrs.push_back(nullptr);
  plan.cwd = options.cwd.string();
  CPU_ZERO(&plan.cpus);
  for (int c : options.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &plan.cpus);
  plan.pin = !options.cpus.empty();
  struct rlimit nofile {};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    plan.max_fd = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20));
}

// The descriptors spawn opens (all close-on-exec in the parent).
struct SpawnFds {
  int null_fd = -1, log_fd = -1, log_read = -1, log_file = -1;
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, report_pipe[2] = {-1, -1};
  void close_all() {
    close_fd(null_fd);
    close_fd(log_fd);
    close_fd(log_read);
    close_fd(log_file);
    for (int* p : {in_pipe, out_pipe, report_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  }
};

// Opens /dev/null, the log (when out_fd < 0; out_fd becomes its fd) and the pipes. Returns what
// failed, "" when all opened.
std::string open_fds(const SpawnOptions& options, SpawnFds& fds, int& out_fd) {
  fds.null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fds.null_fd < 0) return "cannot open /dev/null: " + errno_text(errno);
  if (out_fd < 0) {
    if (options.log_path.empty()) {
      fds.log_fd = ::fcntl(fds.null_fd, F_DUPFD_CLOEXEC, 0);
    } else if (options.log_cap) {
      // Through a pipe that the log pump bounds (util/log_pump.h); the file is opened here, so a
      // log that cannot be written is said before anything starts.
      fds.log_file = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      int log_pipe[2] = {-1, -1};
      if (fds.log_file >= 0 && ::pipe2(log_pipe, O_CLOEXEC) == 0) {
        fds.log_read = log_pipe[0];
        fds.log_fd = log_pipe[1];
      }
    } else {
      fds.log_fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (fds.log_fd < 0) return "cannot open log " + options.log_path.string() + ": " + errno_text(errno);
    out_fd = fds.log_fd;
  }
  if ((options.protocol_pipes &&
       (::pipe2(fds.in_pipe, O_CLOEXEC) != 0 || ::pipe2(fds.out_pipe, O_CLOEXEC) != 0)) ||
      ::pipe2(fds.report_pipe, O_CLOEXEC) != 0)
    return "cannot create pipes for " + options.argv[0] + ": " + errno_text(errno);
  return "";
}

// The child, after fork: set up (util/child_setup.h), exec.
[[noreturn]] void exec_child(const SpawnOptions& options, const SpawnFds& fds, int out_fd, ExecPlan& plan,
                             pid_t parent_pid) {
  child_setup::ChildFds from{fds.null_fd, out_fd, options.protocol_pipes ? fds.in_pipe[0] : options.control_fd,
                             options.protocol_pipes ? fds.out_pipe[1] : -1, fds.report_pipe[1]};
  child_setup::setup_child(from, parent_pid, plan.pin ? &plan.cpus : nullptr, options.sandbox, plan.cwd.c_str(),
                           plan.max_fd);
  ::execve(plan.program.c_str(), plan.argv_ptrs.data(), plan.env_ptrs.data());
  child_fail(5, ChildStage::kExec);
}

// Reports until end of file (the exec closed the last copy of the pipe): the sandbox's layers,
// then nothing, or a failure. Returns the bytes of a failure report read (0: none).
ssize_t read_reports(int fd, ChildReport& report, sandbox::ChildLayers& layers) {
  ssize_t got = 0;
  for (;;) {
    ssize_t n = ::read(fd, reinterpret_cast<char*>(&report) + got, sizeof report - static_cast<size_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += n;
    if (got < static_cast<ssize_t>(sizeof report)) continue;
    if (report.stage != static_cast<int>(ChildStage::kLayers)) break;
    for (int i = 0; i < sandbox::kLayerCount; ++i) layers.err[static_cast<size_t>(i)] = report.layers[i];
    got = 0;
  }
  return got;
}

// A failure the child reported (`got` bytes of `report`), in words a user can act on.
std::string setup_failure(const std::string& argv0, const std::string& cwd, const ChildReport& report,
                          ssize_t got) {
  if (got != static_cast<ssize_t>(sizeof report)) return "cannot run " + argv0 + ": child set-up failed";
  if (report.stage == static_cast<int>(ChildStage::kExec))
    return "cannot run " + argv0 + ": " + errno_text(report.err);
  if (report.stage == static_cast<int>(ChildStage::kSandbox))
    return "cannot run " + argv0 + " in the sandbox (--sandbox strict): the " +
           sandbox::layer_name(static_cast<sandbox::Layer>(report.layer)) + " layer failed: " +
           errno_text(report.err) + "; to enable it: " +
           sandbox::layer_remedy(static_cast<sandbox::Layer>(report.layer));
  if (report.stage == static_cast<int>(ChildStage::kChdir))
    return "cannot run " + argv0 + ": cannot change to folder " + cwd + ": " + errno_text(report.err);
  return "cannot run " + argv0 + ": child set-up failed: " + errno_text(report.err);
}

// In a PID namespace the program is the grandchild of `pid`: relay -> init -> program.
int program_in_namespace(int pid) {
  int parent = pid;
  for (int depth = 0; depth < 2 && parent > 0; ++depth) {
    int found = -1;
    for (const ProcEntry& p : proc_table())
      if (p.ppid == parent) found = p.pid;
    parent = found;
  }
  return parent;
}

// The started child: its pid, the parent's ends of the protocol pipes, what its sandbox reported.
Child started(int pid, const SpawnFds& fds, const sandbox::ChildLayers& layers, const SpawnOptions& options) {
  Child child;
  child.pid = pid;
  child.to_child = fds.in_pipe[1];
  child.from_child = fds.out_pipe[0];
  child.layers = layers;
  child.program_pid = pid;
  if (options.sandbox && layers.err[sandbox::kPidNs] == 0) child.program_pid = program_in_namespace(pid);
  return child;
}

}  // namespace

namespace subprocess_internal {

std::optional<Child> spawn_with_output(const SpawnOptions& options, int out_fd, std::string& error) {
  error.clear();
  if (options.argv.empty() || options.argv[0].empty()) {
    error = "cannot run an empty command";
    return std::nullopt;
  }
  const std::string& argv0 = options.argv[0];
  ExecPlan plan;
  plan_exec(options, plan);
  SpawnFds fds;
  error = open_fds(options, fds, out_fd);
  if (!error.empty()) {
    fds.close_all();
    return std::nullopt;
  }

  become_subreaper();
  const pid_t parent_pid = ::getpid();
  // Registered under the lock that kill_strays reads the registry under: a child between fork
  // and registration is never taken for a stray.
  std::unique_lock<std::mutex> registering(g_children_mutex);
  pid_t pid = ::fork();
  if (pid > 0) g_children.insert(pid);
  registering.unlock();
  if (pid < 0) {
    error = "cannot start " + argv0 + ": fork: " + errno_text(errno);
    fds.close_all();
    return std::nullopt;
  }
  if (pid == 0) exec_child(options, fds, out_fd, plan, parent_pid);

  // Parent. Also set the group here: whichever of parent and child runs first, the group
  // exists before anyone signals it.
  ::setpgid(pid, pid);
  close_fd(fds.report_pipe[1]);
  close_fd(fds.in_pipe[0]);
  close_fd(fds.out_pipe[1]);
  close_fd(fds.null_fd);
  close_fd(fds.log_fd);
  if (fds.log_read >= 0) {  // the pump owns both ends from here
    pump_log(fds.log_read, fds.log_file, options.log_path, *options.log_cap);
    fds.log_read = fds.log_file = -1;
  }

  ChildReport report{};
  sandbox::ChildLayers layers;
  const ssize_t got = read_reports(fds.report_pipe[0], report, layers);
  close_fd(fds.report_pipe[0]);
  if (got > 0) {
    int raw = 0;
    while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
    }
    forget_child(pid);
    error = setup_failure(argv0, plan.cwd, report, got);
    close_fd(fds.in_pipe[1]);
    close_fd(fds.out_pipe[0]);
    return std::nullopt;
  }

  return started(pid, fds, layers, options);
}

}  // namespace subprocess_internal

std::optional<Child> spawn(const SpawnOptions& options, std::string& error) {
  return spawn_with_output(options, -1, error);
}

constexpr int kZygoteAnswerMs = 120'000;  // a zygote's first answer includes its import of torch

// The zygote's side of this is worker/zygote.cc; the order below is what makes the fork kbv's own
// child, registered before it is one: the zygote forks an intermediate process, which forks the
// worker, reports the worker's pid here and waits; this process registers the pid and writes "g";
// the intermediate process reads it and ends, so the worker is handed to the nearest subreaper,
// this process (become_subreaper); the worker waits to see this process as its parent and only
// then reads the request (the rest of the socket) and sets itself up as exec_child would.
std::optional<Child> spawn_forked(const SpawnOptions& options, int zygote_socket, const ForkRequestText& request,
                                  bool& zygote_failed, std::string& error) {
  error.clear();
  zygote_failed = false;
  int out_fd = -1;
  SpawnFds fds;
  error = open_fds(options, fds, out_fd);
  int req[2] = {-1, -1};
  if (error.empty() && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, req) != 0)
    error = "cannot create the worker zygote's request socket: " + errno_text(errno);
  if (!error.empty()) {
    fds.close_all();
    return std::nullopt;
  }
  become_subreaper();
  const std::string text = request(child_environment(options));
  auto fail_zygote = [&](const std::string& why) {
    zygote_failed = true;
    error = "the worker zygote: " + why;
    fds.close_all();
    close_fd(req[0]);
    close_fd(req[1]);
    return std::nullopt;
  };
  if (text.empty()) return fail_zygote("the worker's request cannot be written");
  // One byte and the six descriptors, in one message.
  int send[6] = {fds.null_fd, out_fd, fds.in_pipe[0], fds.out_pipe[1], fds.report_pipe[1], req[1]};
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof send)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof send);
  std::memcpy(CMSG_DATA(c), send, sizeof send);
  ssize_t sent;
  do sent = ::sendmsg(zygote_socket, &msg, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent != 1) return fail_zygote("cannot send it a request: " + errno_text(errno));
  // Only the fork holds the child's ends now.
  close_fd(fds.report_pipe[1]);
  close_fd(fds.in_pipe[0]);
  close_fd(fds.out_pipe[1]);
  close_fd(fds.null_fd);
  close_fd(req[1]);
  close_fd(fds.log_fd);  // out_fd: the same descriptor

  // The zygote may still be importing torch; one that does not answer in time is given up (a
  // worker exec'd instead then meets the callers' own start-up timeouts).
  ChildReport first{};
  ssize_t got = 0;
  pollfd ready{fds.report_pipe[0], POLLIN, 0};
  int polled;
  do polled = ::poll(&ready, 1, kZygoteAnswerMs);
  while (polled < 0 && errno == EINTR);
  if (polled != 1) return fail_zygote("no answer within " + std::to_string(kZygoteAnswerMs / 1000) + " s");
  while (got < static_cast<ssize_t>(sizeof first)) {
    ssize_t n = ::read(fds.report_pipe[0], reinterpret_cast<char*>(&first) + got, sizeof first - static_cast<size_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += n;
  }
  if (got != static_cast<ssize_t>(sizeof first) || first.stage != static_cast<int>(ChildStage::kPid) || first.err <= 0)
    return fail_zygote(got == static_cast<ssize_t>(sizeof first) ? "could not fork: " + errno_text(first.err)
                                                                  : "ended without forking");
  const pid_t pid = first.err;
  {
    std::lock_guard<std::mutex> registering(g_children_mutex);
    g_children.insert(pid);
  }
  if (fds.log_read >= 0) {  // the pump owns both ends from here
    pump_log(fds.log_read, fds.log_file, options.log_path, *options.log_cap);
    fds.log_read = fds.log_file = -1;
  }
  const std::string go = "g" + text;
  size_t off = 0;
  while (off < go.size()) {
    ssize_t n = ::send(req[0], go.data() + off, go.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close_fd(req[0]);  // end of the request

  ChildReport report{};
  sandbox::ChildLayers layers;
  got = off == go.size() ? read_reports(fds.report_pipe[0], report, layers) : -1;
  close_fd(fds.report_pipe[0]);
  if (got != 0) {
    kill_group(pid);  // reaps it once it is ours; a worker never adopted ends when its parent does
    forget_child(pid);
    error = got < 0 ? "cannot send the worker zygote's fork its request"
                    : setup_failure(options.argv[0], options.cwd.string(), report, got);
    close_fd(fds.in_pipe[1]);
    close_fd(fds.out_pipe[0]);
    return std::nullopt;
  }
  return started(pid, fds, layers, options);
}


}  // namespace kbv
