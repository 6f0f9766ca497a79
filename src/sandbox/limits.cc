// Limits and identity, in the child just before seccomp and exec: rlimits, no_new_privs, every
// capability dropped (effective, permitted, inheritable, ambient, bounding set) with securebits
// locked so that uid 0 gains nothing back through exec, and, when kbv is root, uid/gid 65534.
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <linux/capability.h>
#include <linux/securebits.h>

#include "sandbox/sandbox.h"

namespace kbv::sandbox {

int apply_limits(const Plan& plan) {
  for (size_t i = 0; i < plan.rlimit_resource.size(); ++i) {
    struct rlimit want {static_cast<rlim_t>(plan.rlimit_value[i]), static_cast<rlim_t>(plan.rlimit_value[i])};
    struct rlimit now {};
    if (::getrlimit(plan.rlimit_resource[i], &now) == 0 && now.rlim_max != RLIM_INFINITY && now.rlim_max < want.rlim_max)
      want.rlim_cur = want.rlim_max = now.rlim_max;  // never above the hard limit kbv itself has
    if (::setrlimit(plan.rlimit_resource[i], &want) != 0) return errno;
  }
  return 0;
}

int apply_no_new_privs() { return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno; }

int drop_identity(const Plan& plan) {
  // With CAP_SETPCAP still held (root, or root of the worker's user namespace).
  const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) return errno;
  for (int cap = 0; cap <= 63; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  if (plan.drop_uid) {
    if (::setgroups(0, nullptr) != 0) return errno;
    if (::setresgid(plan.gid, plan.gid, plan.gid) != 0) return errno;
    if (::setresuid(plan.uid, plan.uid, plan.uid) != 0) return errno;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  return 0;
}

}  // namespace kbv::sandbox
