// Landlock: filesystem access by path (read the system, the Python environment, the worker module
// and the solution; write only /tmp = scratch, the build folder under it and /dev/shm), no TCP bind
// or connect (ABI 4), no signal to a process outside the worker's domain and no abstract unix
// socket outside it (ABI 6). Defined here rather than from linux/landlock.h: Debian 12's headers
// stop at ABI 3, and the running kernel decides what is handled.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "sandbox/sandbox.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

namespace kbv::sandbox {
namespace {

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0, kScopeSignal = 1ULL << 1;

uint64_t handled_fs(int abi) {
  uint64_t all = (1ULL << 13) - 1;
  if (abi >= 2) all |= 1ULL << 13;  // refer
  if (abi >= 3) all |= 1ULL << 14;  // truncate
  if (abi >= 5) all |= 1ULL << 15;  // ioctl on devices
  return all;
}

}  // namespace

int landlock_abi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

int apply_landlock(const Plan& plan) {
  const int abi = plan.landlock_abi;
  if (abi <= 0) return ENOSYS;
  RulesetAttr attr{handled_fs(abi), 0, 0};
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // no rule: no TCP bind or connect at all
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    size = sizeof attr;
  }
  int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return errno;
  for (size_t i = 0; i < plan.landlock_paths.size(); ++i) {
    int fd = ::open(plan.landlock_paths[i].c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // a folder this machine lacks (/lib32, /opt): nothing to allow
    PathBeneathAttr rule{plan.landlock_access[i] & handled_fs(abi), fd};
    // A file (not a folder) takes only the rights that apply to files.
    long r = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
    if (r != 0 && errno == EINVAL) {
      rule.allowed_access &= (1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 14) | (1ULL << 15);
      r = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
    }
    int err = r == 0 ? 0 : errno;
    ::close(fd);
    if (err != 0) {
      ::close(ruleset);
      return err;
    }
  }
  int err = ::syscall(SYS_landlock_restrict_self, ruleset, 0) == 0 ? 0 : errno;
  ::close(ruleset);
  return err;
}

}  // namespace kbv::sandbox
