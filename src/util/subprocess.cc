// Child processes. Notes for callers:
// - SIGPIPE: writing to a child that has gone away raises SIGPIPE in the writer. The caller (the
//   supervisor) ignores SIGPIPE process-wide and handles EPIPE; this file changes no signal
//   disposition of the calling process. In the child, SIGPIPE is reset to its default and the
//   signal mask is cleared before exec, so children start as if from a shell.
// - SIGCHLD must not be ignored (SIG_IGN) by the caller, or waitpid cannot report exit statuses.
// - spawn() is safe to call from several threads: every fd it creates is O_CLOEXEC in the parent,
//   and the child closes everything except 0-4 before exec.
#include "util/subprocess.h"

#include "util/log_pump.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

extern char** environ;

namespace kbv {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Children started by spawn() and not yet reaped. Every other child of this process is a stray:
// a process that left a worker's group and was adopted here (kill_strays).
std::mutex g_children_mutex;
std::unordered_set<int> g_children;

void forget_child(int pid) {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  g_children.erase(pid);
}

// An orphaned descendant comes to the nearest subreaper among its ancestors rather than to init,
// so what a worker's processes leave behind stays findable (kill_strays).
void become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] { ::prctl(PR_SET_CHILD_SUBREAPER, 1); });
}

// One line of /proc/<pid>/stat: "pid (comm) state ppid pgrp ...".
struct ProcEntry {
  int pid = 0, ppid = 0, pgrp = 0;
  char state = '?';
};

std::vector<ProcEntry> proc_table() {
  std::vector<ProcEntry> table;
  DIR* dir = ::opendir("/proc");
  if (!dir) return table;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[288];  // "/proc/" + a name of up to 255 bytes + "/stat"
    std::snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    char buffer[512];
    ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    if (n <= 0) continue;
    buffer[n] = '\0';
    // comm may hold spaces and parentheses: the fields start after the last ')'.
    const char* fields = std::strrchr(buffer, ')');
    ProcEntry p;
    p.pid = std::atoi(e->d_name);
    if (fields && std::sscanf(fields + 1, " %c %d %d", &p.state, &p.ppid, &p.pgrp) == 3) table.push_back(p);
  }
  ::closedir(dir);
  return table;
}

bool ended(const ProcEntry& p) { return p.state == 'Z' || p.state == 'X'; }

std::string command_of(int pid) {
  std::string text;
  for (const char* file : {"cmdline", "comm"}) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buffer[160];
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (n <= 0) continue;
    text.assign(buffer, static_cast<size_t>(n));
    std::replace(text.begin(), text.end(), '\0', ' ');
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
    if (n == static_cast<ssize_t>(sizeof buffer)) text = text.substr(0, 120) + "...";
    if (!text.empty()) break;
  }
  return text;
}

// Stops `root` and everything under it, then kills them all. A stopped process cannot fork; a
// child made before its parent stopped shows up in the next pass over /proc, until two passes
// find nothing new. Returns the processes it killed.
std::unordered_set<int> kill_tree(int root) {
  std::unordered_set<int> tree{root};
  ::kill(root, SIGSTOP);
  for (int pass = 0, quiet = 0; pass < 200 && quiet < 2; ++pass) {
    const std::vector<ProcEntry> table = proc_table();
    bool grew = false;
    for (bool more = true; more;) {
      more = false;
      for (const ProcEntry& p : table)
        if (tree.count(p.ppid) && tree.insert(p.pid).second) {
          ::kill(p.pid, SIGSTOP);
          more = grew = true;
        }
    }
    quiet = grew ? 0 : quiet + 1;
    if (!grew) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (int pid : tree) ::kill(pid, SIGKILL);
  return tree;
}

// Reaps a child that is not spawn()'s, waiting up to `timeout`.
void reap(int pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int raw = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &raw, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

ExitStatus status_from_wait(int raw) {
  ExitStatus s;
  if (WIFEXITED(raw)) {
    s.exited = true;
    s.code = WEXITSTATUS(raw);
  } else if (WIFSIGNALED(raw)) {
    s.signaled = true;
    s.signal = WTERMSIG(raw);
  }
  return s;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGURG: return "SIGURG";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGIO: return "SIGIO";
    case SIGSYS: return "SIGSYS";
    default: return nullptr;
  }
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

// What the child reports through the exec-error pipe: a set-up failure, or (kLayers, not a
// failure) which sandbox layers it applied, just before exec.
enum class ChildStage : int { kSetup = 1, kChdir = 2, kExec = 3, kSandbox = 4, kLayers = 5 };
struct ChildReport {
  int stage;
  int err;
  int layer;
  int layers[sandbox::kLayerCount];
};

[[noreturn]] void child_fail(int report_fd, ChildStage stage, int err = -1, int layer = -1) {
  ChildReport report{static_cast<int>(stage), err < 0 ? errno : err, layer, {}};
  ssize_t ignored = ::write(report_fd, &report, sizeof report);
  (void)ignored;
  ::_exit(127);
}

// The relay (kbv's side of a PID namespace): ends as the program ended, with its status, which the
// namespace's init passes on through `status_fd`.
[[noreturn]] void relay(pid_t init, int status_fd) {
  ::close_range(0, static_cast<unsigned>(status_fd) - 1, 0);
  int raw = 0;
  while (::waitpid(init, &raw, 0) < 0 && errno == EINTR) {
  }
  int program = 0;
  if (::read(status_fd, &program, sizeof program) == static_cast<ssize_t>(sizeof program)) raw = program;
  if (WIFSIGNALED(raw)) {
    const int sig = WTERMSIG(raw);
    struct rlimit none {0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(raw) ? WEXITSTATUS(raw) : 127);
}

// The namespace's init: reaps everything orphaned in it; when the program ends, passes its status
// on and ends, and the kernel kills whatever is left in the namespace.
[[noreturn]] void init_loop(pid_t program, int status_fd) {
  ::close_range(0, static_cast<unsigned>(status_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(status_fd) + 1, ~0U, 0);
  for (;;) {
    int raw = 0;
    pid_t p = ::wait(&raw);
    if (p == program) {
      ssize_t ignored = ::write(status_fd, &raw, sizeof raw);
      (void)ignored;
      ::_exit(0);
    }
    if (p < 0 && errno == ECHILD) ::_exit(0);
  }
}

// The sandbox, between fork and exec; returns in the process that is to exec. `report` is fd 5.
void sandboxed_child(const sandbox::Plan& plan, int report) {
  using namespace sandbox;
  ChildReport layers{static_cast<int>(ChildStage::kLayers), 0, -1, {}};
  for (int& e : layers.layers) e = -1;
  auto done = [&](Layer l, int err) {
    layers.layers[l] = err;
    if (err != 0 && plan.mode == Mode::strict) child_fail(report, ChildStage::kSandbox, err, l);
    return err == 0;
  };
  if (plan.want[kUserNs]) done(kUserNs, enter_user_namespace(plan));
  for (Layer l : {kMountNs, kNetNs, kIpcNs, kPidNs})
    if (plan.want[l]) done(l, enter_namespace(l));
  const bool pid_ns = plan.want[kPidNs] && layers.layers[kPidNs] == 0;
  int status_pipe[2] = {-1, -1};
  if (pid_ns) {
    if (::pipe2(status_pipe, O_CLOEXEC) != 0) child_fail(report, ChildStage::kSandbox, errno, kPidNs);
    pid_t init = ::fork();
    if (init < 0) child_fail(report, ChildStage::kSandbox, errno, kPidNs);
    if (init > 0) {
      ::close(status_pipe[1]);
      relay(init, status_pipe[0]);
    }
    ::close(status_pipe[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the relay gone: the namespace goes
  }
  if (plan.want[kMountNs] && layers.layers[kMountNs] == 0) done(kMountNs, setup_mounts(plan, pid_ns));
  if (pid_ns) {
    pid_t program = ::fork();
    if (program < 0) child_fail(report, ChildStage::kSandbox, errno, kPidNs);
    if (program > 0) init_loop(program, status_pipe[1]);
    ::close(status_pipe[1]);
  }
  if (plan.want[kLimits]) done(kLimits, apply_limits(plan));
  if (plan.want[kNoNewPrivs]) done(kNoNewPrivs, apply_no_new_privs());
  if (plan.want[kLandlock]) done(kLandlock, apply_landlock(plan));
  if (plan.want[kCaps] || plan.want[kUid]) {
    int err = drop_identity(plan);
    if (plan.want[kCaps]) done(kCaps, err);
    if (plan.want[kUid]) done(kUid, err);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a change of uid cleared it
  if (plan.want[kSeccomp]) done(kSeccomp, apply_seccomp(plan));
  ssize_t ignored = ::write(report, &layers, sizeof layers);
  (void)ignored;
}

// Spawn with stdout+stderr going to `out_fd` (not closed here).
std::optional<Child> spawn_with_output(const SpawnOptions& options, int out_fd,
                                       std::string& error) {
  error.clear();
  if (options.argv.empty() || options.argv[0].empty()) {
    error = "cannot run an empty command";
    return std::nullopt;
  }
  const std::string& argv0 = options.argv[0];

  // Everything the child needs is built here: after fork only async-signal-safe calls.
  std::vector<std::string> env = child_environment(options);
  std::string program = resolve_program(argv0, env);
  std::vector<char*> argv_ptrs;
  for (const auto& a : options.argv) argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (const auto& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
  env_ptrs.push_back(nullptr);
  std::string cwd = options.cwd.string();
  struct rlimit nofile {};
  int max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    max_fd = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20));

  int null_fd = -1, log_fd = -1, log_read = -1, log_file = -1;
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, report_pipe[2] = {-1, -1};
  auto cleanup = [&] {
    close_fd(null_fd);
    close_fd(log_fd);
    close_fd(log_read);
    close_fd(log_file);
    for (int* p : {in_pipe, out_pipe, report_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  };

  null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) {
    error = "cannot open /dev/null: " + errno_text(errno);
    cleanup();
    return std::nullopt;
  }
  if (out_fd < 0) {
    if (options.log_path.empty()) {
      log_fd = ::fcntl(null_fd, F_DUPFD_CLOEXEC, 0);
    } else if (options.log_cap) {
      // Through a pipe that the log pump bounds (util/log_pump.h); the file is opened here, so a
      // log that cannot be written is said before anything starts.
      log_file = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      int log_pipe[2] = {-1, -1};
      if (log_file >= 0 && ::pipe2(log_pipe, O_CLOEXEC) == 0) {
        log_read = log_pipe[0];
        log_fd = log_pipe[1];
      }
    } else {
      log_fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (log_fd < 0) {
      error = "cannot open log " + options.log_path.string() + ": " + errno_text(errno);
      cleanup();
      return std::nullopt;
    }
    out_fd = log_fd;
  }
  if ((options.protocol_pipes &&
       (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0)) ||
      ::pipe2(report_pipe, O_CLOEXEC) != 0) {
    error = "cannot create pipes for " + argv0 + ": " + errno_text(errno);
    cleanup();
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
    cleanup();
    return std::nullopt;
  }

  if (pid == 0) {
    // Child. Own process group, default SIGPIPE, empty signal mask; killed if the supervisor
    // dies (SIGKILL included), so no worker outlives it as an orphan. The death signal follows
    // the forking thread, and kbv forks only from threads that outlive their workers.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent_pid) ::_exit(127);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);

    // Lift every source fd above the targets first so that no dup2 clobbers another source.
    const int kHigh = 10;
    int report = ::fcntl(report_pipe[1], F_DUPFD_CLOEXEC, kHigh);
    if (report < 0) child_fail(report_pipe[1], ChildStage::kSetup);
    int hi_null = ::fcntl(null_fd, F_DUPFD_CLOEXEC, kHigh);
    int hi_out = ::fcntl(out_fd, F_DUPFD_CLOEXEC, kHigh);
    if (hi_null < 0 || hi_out < 0) child_fail(report, ChildStage::kSetup);
    int hi_p_in = -1, hi_p_out = -1;
    if (options.protocol_pipes) {
      hi_p_in = ::fcntl(in_pipe[0], F_DUPFD_CLOEXEC, kHigh);
      hi_p_out = ::fcntl(out_pipe[1], F_DUPFD_CLOEXEC, kHigh);
      if (hi_p_in < 0 || hi_p_out < 0) child_fail(report, ChildStage::kSetup);
    }
    // The report pipe lives at fd 5 (close-on-exec), everything above it is closed.
    if (::dup3(report, 5, O_CLOEXEC) < 0) child_fail(report, ChildStage::kSetup);
    report = 5;
    if (::dup2(hi_null, 0) < 0 || ::dup2(hi_out, 1) < 0 || ::dup2(hi_out, 2) < 0)
      child_fail(report, ChildStage::kSetup);
    if (options.protocol_pipes) {
      if (::dup2(hi_p_in, 3) < 0 || ::dup2(hi_p_out, 4) < 0) child_fail(report, ChildStage::kSetup);
    } else {
      ::close(3);
      ::close(4);
    }
    if (::close_range(6, ~0U, 0) != 0) {
      for (int fd = 6; fd < max_fd; ++fd) ::close(fd);
    }
    if (options.sandbox) sandboxed_child(*options.sandbox, report);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) child_fail(report, ChildStage::kChdir);
    ::execve(program.c_str(), argv_ptrs.data(), env_ptrs.data());
    child_fail(report, ChildStage::kExec);
  }

  // Parent. Also set the group here: whichever of parent and child runs first, the group
  // exists before anyone signals it.
  ::setpgid(pid, pid);
  close_fd(report_pipe[1]);
  close_fd(in_pipe[0]);
  close_fd(out_pipe[1]);
  close_fd(null_fd);
  close_fd(log_fd);
  if (log_read >= 0) {  // the pump owns both ends from here
    pump_log(log_read, log_file, options.log_path, *options.log_cap);
    log_read = log_file = -1;
  }

  // Reports until end of file (the exec closed the last copy of the pipe): the sandbox's layers,
  // then nothing, or a failure.
  ChildReport report{};
  sandbox::ChildLayers layers;
  ssize_t got = 0;
  for (;;) {
    ssize_t n = ::read(report_pipe[0], reinterpret_cast<char*>(&report) + got,
                       sizeof report - static_cast<size_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += n;
    if (got < static_cast<ssize_t>(sizeof report)) continue;
    if (report.stage != static_cast<int>(ChildStage::kLayers)) break;
    for (int i = 0; i < sandbox::kLayerCount; ++i) layers.err[static_cast<size_t>(i)] = report.layers[i];
    got = 0;
  }
  close_fd(report_pipe[0]);
  if (got > 0) {
    int raw = 0;
    while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
    }
    forget_child(pid);
    if (got != static_cast<ssize_t>(sizeof report)) {
      error = "cannot run " + argv0 + ": child set-up failed";
    } else if (report.stage == static_cast<int>(ChildStage::kExec)) {
      error = "cannot run " + argv0 + ": " + errno_text(report.err);
    } else if (report.stage == static_cast<int>(ChildStage::kSandbox)) {
      error = "cannot run " + argv0 + " in the sandbox (--sandbox strict): the " +
              sandbox::layer_name(static_cast<sandbox::Layer>(report.layer)) + " layer failed: " +
              errno_text(report.err) + "; to enable it: " +
              sandbox::layer_remedy(static_cast<sandbox::Layer>(report.layer));
    } else if (report.stage == static_cast<int>(ChildStage::kChdir)) {
      error = "cannot run " + argv0 + ": cannot change to folder " + cwd + ": " +
              errno_text(report.err);
    } else {
      error = "cannot run " + argv0 + ": child set-up failed: " + errno_text(report.err);
    }
    close_fd(in_pipe[1]);
    close_fd(out_pipe[0]);
    return std::nullopt;
  }

  Child child;
  child.pid = pid;
  child.to_child = in_pipe[1];
  child.from_child = out_pipe[0];
  child.layers = layers;
  child.program_pid = pid;
  // In a PID namespace the program is the grandchild: relay -> init -> program.
  if (options.sandbox && layers.err[sandbox::kPidNs] == 0) {
    child.program_pid = -1;
    int parent = pid;
    for (int depth = 0; depth < 2 && parent > 0; ++depth) {
      int found = -1;
      for (const ProcEntry& p : proc_table())
        if (p.ppid == parent) found = p.pid;
      parent = found;
    }
    child.program_pid = parent;
  }
  return child;
}

}  // namespace

uint64_t machine_memory_bytes() {
  uint64_t total = 0;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
        total = static_cast<uint64_t>(kb) * 1024;
        break;
      }
    std::fclose(f);
  }
  // cgroup v2: this process's group ("0::/path") and its memory.max ("max" or bytes).
  std::string group;
  if (std::FILE* f = std::fopen("/proc/self/cgroup", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "0::", 3) == 0) {
        group = line + 3;
        while (!group.empty() && (group.back() == '\n' || group.back() == '\r')) group.pop_back();
      }
    std::fclose(f);
  }
  if (!group.empty())
    if (std::FILE* f = std::fopen(("/sys/fs/cgroup" + group + "/memory.max").c_str(), "r")) {
      unsigned long long limit = 0;
      if (std::fscanf(f, "%llu", &limit) == 1 && limit > 0 && (total == 0 || limit < total)) total = limit;
      std::fclose(f);
    }
  return total;
}

std::string ExitStatus::describe() const {
  if (exited) return "exited with code " + std::to_string(code);
  if (signaled) {
    std::string text = "killed by signal " + std::to_string(signal);
    if (const char* name = signal_name(signal)) text += std::string(" (") + name + ")";
    if (signal == SIGKILL && max_rss_bytes > 0) {
      const double gib = 1024.0 * 1024.0 * 1024.0, peak = static_cast<double>(max_rss_bytes) / gib;
      const uint64_t machine = machine_memory_bytes();
      char buf[256];
      if (machine > 0 && max_rss_bytes * 2 >= machine)
        std::snprintf(buf, sizeof buf,
                      " after using %.1f GiB of memory, of the %.1f GiB this machine allows: most likely killed "
                      "for memory (the kernel's out-of-memory killer)",
                      peak, static_cast<double>(machine) / gib);
      else
        std::snprintf(buf, sizeof buf, " (its peak memory: %.2f GiB)", peak);
      text += buf;
    }
    return text;
  }
  return "ended with an unknown status";
}

std::optional<Child> spawn(const SpawnOptions& options, std::string& error) {
  return spawn_with_output(options, -1, error);
}

std::optional<ExitStatus> try_wait(int pid) {
  int raw = 0;
  for (;;) {
    struct rusage usage{};
    pid_t r = ::wait4(pid, &raw, WNOHANG, &usage);
    if (r == 0) return std::nullopt;
    if (r < 0 && errno == EINTR) continue;
    forget_child(pid);
    if (r == pid) {
      ExitStatus s = status_from_wait(raw);
      s.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
      return s;
    }
    // ECHILD: not our child or already reaped; there is nothing left to wait for.
    return ExitStatus{};
  }
}

std::optional<ExitStatus> wait_for(int pid, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  auto step = std::chrono::microseconds(200);
  for (;;) {
    if (auto status = try_wait(pid)) return status;
    auto now = clock::now();
    if (now >= deadline) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
    std::this_thread::sleep_for(std::min(step, left));
    step = std::min(step * 2, std::chrono::microseconds(10000));
  }
}

ExitStatus kill_group(int pid) {
  if (pid <= 0) return ExitStatus{};
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);  // in case the child left its group
  int raw = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &raw, 0);
    if (r < 0 && errno == EINTR) continue;
    forget_child(pid);
    if (r == pid) return status_from_wait(raw);
    return ExitStatus{};
  }
}

std::vector<Stray> kill_strays(int group, std::chrono::milliseconds settle) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + settle;
  // Members of the killed group that are still exiting have not handed their children over yet.
  while (group > 0 && clock::now() < deadline) {
    const std::vector<ProcEntry> table = proc_table();
    if (std::none_of(table.begin(), table.end(), [&](const ProcEntry& p) { return p.pgrp == group && !ended(p); }))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  static std::mutex sweeping;  // one sweep at a time: each stray is reported once
  std::lock_guard<std::mutex> one_at_a_time(sweeping);
  const int self = ::getpid();
  std::vector<Stray> found;
  std::unordered_set<int> killed;
  // Killing a stray's tree hands its members that outlive their parents to this process as well
  // (zombies, or dying): further rounds reap them. Bounded, in case something keeps forking.
  for (int round = 0; round < 50; ++round) {
    std::vector<ProcEntry> strays;
    {
      const std::vector<ProcEntry> table = proc_table();
      std::lock_guard<std::mutex> lock(g_children_mutex);
      for (const ProcEntry& p : table)
        if (p.ppid == self && !g_children.count(p.pid)) strays.push_back(p);
    }
    if (strays.empty()) break;
    for (const ProcEntry& p : strays) {
      if (ended(p)) continue;
      if (!killed.count(p.pid)) found.push_back({p.pid, command_of(p.pid)});  // not one of a tree killed before
      const std::unordered_set<int> tree = kill_tree(p.pid);
      killed.insert(tree.begin(), tree.end());
    }
    for (const ProcEntry& p : strays) reap(p.pid, std::chrono::milliseconds(1000));
  }
  return found;
}

std::vector<Stray> namespace_strays(int group, const std::string& pid_ns) {
  std::vector<Stray> found;
  if (pid_ns.empty()) return found;
  for (const ProcEntry& p : proc_table()) {
    if (p.pgrp == group || ended(p)) continue;
    char path[64], link[128] = {};
    std::snprintf(path, sizeof path, "/proc/%d/ns/pid", p.pid);
    ssize_t n = ::readlink(path, link, sizeof link - 1);
    if (n > 0 && pid_ns == link) found.push_back({p.pid, command_of(p.pid)});
  }
  return found;
}

std::vector<int> stop_processes(int group, const std::string& pid_ns) {
  const int self = ::getpid();
  std::unordered_set<int> stopped;
  auto in_namespace = [&](int pid) {
    if (pid_ns.empty()) return false;
    char path[64], link[128] = {};
    std::snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    const ssize_t n = ::readlink(path, link, sizeof link - 1);
    return n > 0 && pid_ns == link;
  };
  if (group > 0) ::kill(-group, SIGSTOP);
  for (int pass = 0, quiet = 0; pass < 200 && quiet < 2; ++pass) {
    const std::vector<ProcEntry> table = proc_table();
    bool grew = false;
    for (bool more = true; more;) {
      more = false;
      for (const ProcEntry& p : table) {
        if (ended(p) || p.pid == self || stopped.count(p.pid)) continue;
        bool take = (group > 0 && p.pgrp == group) || stopped.count(p.ppid) > 0;
        if (!take && p.ppid == self) {
          std::lock_guard<std::mutex> lock(g_children_mutex);
          take = !g_children.count(p.pid);  // a stray adopted by this process
        }
        if (!take) take = in_namespace(p.pid);
        if (!take) continue;
        ::kill(p.pid, SIGSTOP);
        stopped.insert(p.pid);
        more = grew = true;
      }
    }
    quiet = grew ? 0 : quiet + 1;
    if (!grew) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {stopped.begin(), stopped.end()};
}

void continue_processes(const std::vector<int>& pids, int group) {
  for (int pid : pids) ::kill(pid, SIGCONT);
  if (group > 0) ::kill(-group, SIGCONT);
}

char process_state(int pid) {
  for (const ProcEntry& p : proc_table())
    if (p.pid == pid) return p.state;
  return '?';
}

RunResult run_command(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env_set,
                      std::chrono::milliseconds timeout, size_t max_output) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  RunResult result;

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.error = "cannot create a pipe: " + errno_text(errno);
    return result;
  }
  SpawnOptions options;
  options.argv = argv;
  options.env_set = env_set;
  options.protocol_pipes = false;
  auto child = spawn_with_output(options, out[1], result.error);
  ::close(out[1]);
  if (!child) {
    ::close(out[0]);
    return result;
  }
  result.started = true;
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);

  auto keep_tail = [&](bool final) {
    if (result.output.size() > (final ? max_output : 2 * max_output + (1 << 16)))
      result.output.erase(0, result.output.size() - max_output);
  };
  // Reads what is available now; false once the pipe reached end of file.
  bool pipe_open = true;
  auto drain = [&] {
    char buffer[1 << 16];
    while (pipe_open) {
      ssize_t n = ::read(out[0], buffer, sizeof buffer);
      if (n > 0) {
        result.output.append(buffer, static_cast<size_t>(n));
        keep_tail(false);
      } else if (n == 0) {
        pipe_open = false;
      } else if (errno != EINTR) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) pipe_open = false;
        return;
      }
    }
  };

  std::optional<ExitStatus> status;
  for (;;) {
    drain();
    // The child is checked as well as the pipe: a background grandchild may hold the pipe
    // open long after the command itself has finished. WNOWAIT leaves the child a zombie, so
    // its pid (and group id) stays reserved until the leftovers of the group are killed.
    siginfo_t info{};
    int r = ::waitid(P_PID, static_cast<id_t>(child->pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || info.si_pid == child->pid) {
      ::kill(-child->pid, SIGKILL);  // background jobs of a finished build go too
      status = try_wait(child->pid);
      while (!status) status = wait_for(child->pid, std::chrono::milliseconds(1000));
      break;
    }
    auto now = clock::now();
    if (now >= deadline) break;
    int wait_ms = static_cast<int>(std::min<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1, 20));
    if (pipe_open) {
      struct pollfd pfd {out[0], POLLIN, 0};
      ::poll(&pfd, 1, wait_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(wait_ms, 5)));
    }
  }
  if (status) {
    drain();
    result.status = *status;
  } else {
    result.timed_out = true;
    result.status = kill_group(child->pid);
    drain();
  }
  ::close(out[0]);
  keep_tail(true);
  return result;
}

std::string tail_file(const std::filesystem::path& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0) {
    off_t size = st.st_size;
    off_t start = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
    text.resize(static_cast<size_t>(size - start));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::pread(fd, text.data() + got, text.size() - got, start + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  return text;
}

}  // namespace kbv
