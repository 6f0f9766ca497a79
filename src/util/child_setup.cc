// See child_setup.h. Moved out of spawn.cc so that the worker zygote's forks (worker/zygote.cc)
// set up their children with the very code spawn() uses.
#include "util/child_setup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace kbv::child_setup {

[[noreturn]] void child_fail(int report_fd, ChildStage stage, int err, int layer) {
  ChildReport report{static_cast<int>(stage), err < 0 ? errno : err, layer, {}};
  ssize_t ignored = ::write(report_fd, &report, sizeof report);
  (void)ignored;
  ::_exit(127);
}

namespace {

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
    if (err != 0 && plan.mode == sandbox::Mode::strict) child_fail(report, ChildStage::kSandbox, err, l);
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

}  // namespace

void setup_child(const ChildFds& fds, pid_t parent, const cpu_set_t* cpus, const sandbox::Plan* plan, const char* cwd,
                 int max_fd) {
  // Own process group, default SIGPIPE, empty signal mask; killed if the supervisor
  // dies (SIGKILL included), so no worker outlives it as an orphan. The death signal follows
  // the forking thread, and kbv forks only from threads that outlive their workers.
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  // Lift every source fd above the targets first so that no dup2 clobbers another source.
  const int kHigh = 10;
  int report = ::fcntl(fds.report, F_DUPFD_CLOEXEC, kHigh);
  if (report < 0) child_fail(fds.report, ChildStage::kSetup);
  int hi_null = ::fcntl(fds.null_fd, F_DUPFD_CLOEXEC, kHigh);
  int hi_out = ::fcntl(fds.out_fd, F_DUPFD_CLOEXEC, kHigh);
  if (hi_null < 0 || hi_out < 0) child_fail(report, ChildStage::kSetup);
  int hi_p_in = -1, hi_p_out = -1;
  if (fds.in_read >= 0 && (hi_p_in = ::fcntl(fds.in_read, F_DUPFD_CLOEXEC, kHigh)) < 0)
    child_fail(report, ChildStage::kSetup);
  if (fds.out_write >= 0 && (hi_p_out = ::fcntl(fds.out_write, F_DUPFD_CLOEXEC, kHigh)) < 0)
    child_fail(report, ChildStage::kSetup);
  // The report pipe lives at fd 5 (close-on-exec), everything above it is closed.
  if (::dup3(report, 5, O_CLOEXEC) < 0) child_fail(report, ChildStage::kSetup);
  report = 5;
  if (::dup2(hi_null, 0) < 0 || ::dup2(hi_out, 1) < 0 || ::dup2(hi_out, 2) < 0)
    child_fail(report, ChildStage::kSetup);
  if (hi_p_in >= 0 ? ::dup2(hi_p_in, 3) < 0 : (::close(3), false)) child_fail(report, ChildStage::kSetup);
  if (hi_p_out >= 0 ? ::dup2(hi_p_out, 4) < 0 : (::close(4), false)) child_fail(report, ChildStage::kSetup);
  if (::close_range(6, ~0U, 0) != 0) {
    for (int fd = 6; fd < max_fd; ++fd) ::close(fd);
  }
  if (cpus && ::sched_setaffinity(0, sizeof *cpus, cpus) != 0) child_fail(report, ChildStage::kSetup);
  if (plan) sandboxed_child(*plan, report);
  if (cwd && *cwd && ::chdir(cwd) != 0) child_fail(report, ChildStage::kChdir);
}

}  // namespace kbv::child_setup
