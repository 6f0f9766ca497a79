// The worker zygote's side (supervisor/zygote.h has the supervisor's, util/spawn.cc spawn_forked
// the hand-over): a Python that imported torch and kbv_worker once and forks a worker per request,
// so that a worker costs a fork instead of an interpreter and torch's import (1.3 CPU s).
// The zygote reads nothing but one byte and six descriptors per request: what a worker is told
// (its environment, sandbox, role) is read by that worker alone, so no worker's request is ever in
// the memory another worker is forked from.
#include "worker/zygote.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "sandbox/sandbox.h"
#include "util/child_setup.h"

namespace kbv {

namespace {

using child_setup::child_fail;
using child_setup::ChildReport;
using child_setup::ChildStage;

constexpr int kControlFd = 3;  // the supervisor's socket (SOCK_SEQPACKET)
constexpr int kFdsPerRequest = 6;  // null, out, protocol in, protocol out, report, request
constexpr auto kGoWait = std::chrono::seconds(30);

// One request: 1 byte and six descriptors. 0: the supervisor closed the socket; -1: a malformed
// message (its descriptors closed), skipped.
int receive(int fds[kFdsPerRequest]) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdsPerRequest)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(kControlFd, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  int got = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const int count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    const int* in = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (int i = 0; i < count; ++i) {
      if (got < kFdsPerRequest)
        fds[got++] = in[i];
      else
        ::close(in[i]);
    }
  }
  if (byte == 'f' && got == kFdsPerRequest && !(msg.msg_flags & MSG_CTRUNC)) return 1;
  for (int i = 0; i < got; ++i) ::close(fds[i]);
  return -1;
}

// The intermediate process: reports the worker's pid, waits for the supervisor's "g" (it has
// registered the pid), ends. Without it in time the worker is killed.
[[noreturn]] void hand_over(pid_t worker, const int fds[kFdsPerRequest]) {
  ChildReport r{static_cast<int>(ChildStage::kPid), static_cast<int>(worker), -1, {}};
  bool ok = ::write(fds[4], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
  pollfd p{fds[5], POLLIN, 0};
  char go = 0;
  ok = ok && ::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kGoWait).count())) == 1 &&
       ::read(fds[5], &go, 1) == 1 && go == 'g';
  if (!ok) ::kill(worker, SIGKILL);
  ::_exit(0);
}

// This process's command line (/proc/self/cmdline, what ps shows) made the one an exec'd worker of
// `role` would show, within the zygote's (longer) one: tools and people tell workers apart by it.
void retitle(const std::string& role) {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return;
  char buf[4096];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // the name may hold spaces
  if (!p) return;
  // Fields after the name start at 3 (state); arg_start and arg_end are 48 and 49.
  unsigned long long start = 0, end = 0;
  int field = 2;
  for (const char* q = p + 1; *q && field < 49;) {
    while (*q == ' ') ++q;
    ++field;
    char* after = nullptr;
    const unsigned long long v = std::strtoull(q, &after, 10);
    if (field == 48) start = v;
    if (field == 49) end = v;
    while (*q && *q != ' ') ++q;
  }
  if (start == 0 || end <= start) return;
  char* area = reinterpret_cast<char*>(start);
  const size_t size = static_cast<size_t>(end - start);
  const size_t python = std::strlen(area);  // argv[0] stays
  const std::string rest = std::string("-I") + '\0' + "-c" + '\0' + "import kbv_worker; kbv_worker.serve('" + role +
                           "')  # forked by kbv's worker zygote";
  if (python + 1 + rest.size() + 1 > size) return;
  std::memcpy(area + python + 1, rest.data(), rest.size());
  std::memset(area + python + 1 + rest.size(), 0, size - python - 1 - rest.size());
}

// The worker, before it serves: adopted by the supervisor, its request read, set up as exec_child
// would. Returns the request; a failure is reported on the report pipe and ends the process.
msg::ForkRequest become_worker(pid_t supervisor, const int fds[kFdsPerRequest]) {
  const int report = fds[4];
  const auto deadline = std::chrono::steady_clock::now() + kGoWait;
  while (::getppid() != supervisor) {
    if (std::chrono::steady_clock::now() > deadline) child_fail(report, ChildStage::kSetup, ETIMEDOUT);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fds[5], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) child_fail(report, ChildStage::kSetup);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[5]);
  msg::ForkRequest request;
  sandbox::Plan plan;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  std::string error = j.is_discarded() ? "not JSON" : msg::from_json(j, request);
  if (error.empty() && request.sandbox) sandbox::plan_from_json(*request.sandbox, plan, error);
  if (!error.empty()) child_fail(report, ChildStage::kSetup, EINVAL);
  retitle(request.role);
  struct rlimit nofile {};
  int max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    max_fd = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20));
  // On the CPUs an exec'd worker would run on (the zygote's count them as torch loaded).
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : request.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpus);
  child_setup::setup_child({fds[0], fds[1], fds[2], fds[3], report}, supervisor, request.cpus.empty() ? nullptr : &cpus,
                           request.sandbox ? &plan : nullptr, request.cwd.c_str(), max_fd);
  // What exec does for a process whose uid the sandbox changed: dumpable again, so its /proc files
  // are its own (the memory phase writes /proc/self/clear_refs).
  ::prctl(PR_SET_DUMPABLE, 1);
  ::close(5);  // the report pipe: its end is what the supervisor reads as "started" (exec's close)
  return request;
}

}  // namespace

py::object zygote() {
  const pid_t supervisor = ::getppid();
  for (;;) {
    int fds[kFdsPerRequest];
    const int got = receive(fds);
    if (got == 0) return py::none();
    if (got < 0) continue;
    PyOS_BeforeFork();
    const pid_t middle = ::fork();
    const int fork_errno = errno;
    if (middle == 0) {
      PyOS_AfterFork_Child();
      ::close(kControlFd);  // no fork of this process asks the zygote for anything
      PyOS_BeforeFork();
      const pid_t worker = ::fork();
      if (worker == 0) {
        PyOS_AfterFork_Child();
        msg::ForkRequest r = become_worker(supervisor, fds);
        // Decoded as os.environ decodes the environment it starts with (the file system encoding,
        // undecodable bytes kept as surrogates), so any value an exec'd worker takes comes through.
        auto text = [](const std::string& s) {
          return py::reinterpret_steal<py::object>(
              PyUnicode_DecodeFSDefaultAndSize(s.data(), static_cast<Py_ssize_t>(s.size())));
        };
        py::dict env;
        for (const std::string& e : r.env) {
          const size_t eq = e.find('=');
          if (eq != std::string::npos) env[text(e.substr(0, eq))] = text(e.substr(eq + 1));
        }
        return py::make_tuple(r.role, env);
      }
      PyOS_AfterFork_Parent();
      if (worker < 0) child_fail(fds[4], ChildStage::kSetup);
      hand_over(worker, fds);
    }
    PyOS_AfterFork_Parent();
    if (middle < 0) {
      ChildReport r{static_cast<int>(ChildStage::kSetup), fork_errno, -1, {}};
      ssize_t ignored = ::write(fds[4], &r, sizeof r);
      (void)ignored;
    }
    for (int fd : fds) ::close(fd);
    if (middle > 0) {
      int status = 0;
      while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
}

}  // namespace kbv
