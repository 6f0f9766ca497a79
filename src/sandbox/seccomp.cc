// seccomp: a deny list compiled with libseccomp in the supervisor (before fork) into a BPF program
// that the child installs just before exec. Denied calls fail with EPERM (the worker sees an error,
// not a kill, so it can say what failed); clone3 fails with ENOSYS so that the C library falls back
// to clone, whose flags can be inspected. Without libseccomp (KBV_HAVE_SECCOMP undefined) the layer
// is unavailable: "built without libseccomp".
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <linux/seccomp.h>

#include "sandbox/sandbox.h"

#ifdef KBV_HAVE_SECCOMP
#include <seccomp.h>
#endif

namespace kbv::sandbox {

bool seccomp_built() {
#ifdef KBV_HAVE_SECCOMP
  return true;
#else
  return false;
#endif
}

std::vector<sock_filter> seccomp_program(std::string& error) {
#ifndef KBV_HAVE_SECCOMP
  error = "built without libseccomp";
  return {};
#else
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    error = "seccomp_init failed";
    return {};
  }
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  int rc = 0;
  auto add = [&](const char* name, unsigned count = 0, const scmp_arg_cmp* args = nullptr, uint32_t action = 0) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // unknown to this libseccomp or this architecture
    int r = seccomp_rule_add_array(ctx, action ? action : deny, nr, count, args);
    if (r != 0 && rc == 0) {
      rc = r;
      error = std::string("seccomp rule for ") + name + ": " + std::strerror(-r);
    }
  };
  // Other processes' memory and state.
  for (const char* n : {"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"}) add(n);
  // Kernel attack surface and tracing.
  for (const char* n : {"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
                        "io_uring_register", "personality", "keyctl", "add_key", "request_key", "kexec_load",
                        "kexec_file_load", "reboot", "init_module", "finit_module", "delete_module", "swapon",
                        "swapoff", "acct", "syslog", "quotactl", "open_by_handle_at", "name_to_handle_at"})
    add(n);
  // The filesystem view and the namespaces.
  for (const char* n : {"mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree",
                        "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr"})
    add(n);
  // clone with a namespace flag; clone3 (flags in memory, out of a filter's sight) answers ENOSYS.
  for (unsigned long flag : {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                             CLONE_NEWCGROUP}) {
    scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    add("clone", 1, &c);
  }
  add("clone3", 0, nullptr, SCMP_ACT_ERRNO(ENOSYS));
  // Sockets: only AF_UNIX (no network at all, also if the network namespace is missing).
  {
    scmp_arg_cmp c = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
    add("socket", 1, &c);
    add("socketpair", 1, &c);
  }
  // Scheduling of other processes (pinning the reference's threads, lowering its priority): only
  // the caller itself (pid 0) may be changed. Other pids are out of sight in the PID namespace too.
  // Affinity not even its own: kbv pins a CPU worker to the thread budget the baselines get
  // (docs/TIMING.md "Thread parity"), and widening it would spread the candidate's work over more
  // cores than theirs (T25). pthread_setaffinity_np and os.sched_setaffinity are this call too.
  add("sched_setaffinity");
  {
    scmp_arg_cmp other = SCMP_A0(SCMP_CMP_NE, 0);
    for (const char* n : {"sched_setscheduler", "sched_setparam", "sched_setattr"}) add(n, 1, &other);
    scmp_arg_cmp who = SCMP_A1(SCMP_CMP_NE, 0);
    add("setpriority", 1, &who);
    add("ioprio_set", 1, &who);
  }
  std::vector<sock_filter> program;
  if (rc == 0) {
    int fd = ::memfd_create("kbv-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
      error = std::string("memfd_create: ") + std::strerror(errno);
    } else if (int r = seccomp_export_bpf(ctx, fd); r != 0) {
      error = std::string("seccomp_export_bpf: ") + std::strerror(-r);
    } else {
      off_t size = ::lseek(fd, 0, SEEK_END);
      program.resize(static_cast<size_t>(size) / sizeof(sock_filter));
      ssize_t got = ::pread(fd, program.data(), program.size() * sizeof(sock_filter), 0);
      if (got != static_cast<ssize_t>(program.size() * sizeof(sock_filter))) {
        error = "reading the exported seccomp program failed";
        program.clear();
      }
    }
    if (fd >= 0) ::close(fd);
  }
  seccomp_release(ctx);
  return program;
#endif
}

int apply_seccomp(const Plan& plan) {
  if (plan.seccomp_filter.empty()) return ENOSYS;
  sock_fprog prog{static_cast<unsigned short>(plan.seccomp_filter.size()),
                  const_cast<sock_filter*>(plan.seccomp_filter.data())};
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0 ? 0 : errno;
}

}  // namespace kbv::sandbox
