// Namespaces and the mount view, applied in the child between fork and exec: only system calls on
// strings made before fork (async-signal-safe).
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/sandbox.h"

namespace kbv::sandbox {
namespace {

int write_text(const char* path, const char* text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t n = std::strlen(text);
  ssize_t w = ::write(fd, text, n);
  int err = w == static_cast<ssize_t>(n) ? 0 : (w < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

}  // namespace

// A user namespace in which kbv's own uid and gid are 0: the rights to make the other namespaces
// and mounts without being root. Maps a single id, so nothing else of the host is anyone's.
int enter_user_namespace(const Plan& plan) {
  if (::unshare(CLONE_NEWUSER) != 0) return errno;
  if (int e = write_text("/proc/self/setgroups", "deny")) return e;
  if (int e = write_text("/proc/self/uid_map", plan.uid_map.c_str())) return e;
  if (int e = write_text("/proc/self/gid_map", plan.gid_map.c_str())) return e;
  return 0;
}

// PID, network, IPC and mount namespaces at once. The PID namespace holds only the children made
// after this call: the spawner forks once more (util/spawn.cc). The network namespace has a
// loopback that stays down: no route anywhere, not even to the host's own ports.
int enter_namespace(Layer layer) {
  int flag = layer == kPidNs ? CLONE_NEWPID : layer == kNetNs ? CLONE_NEWNET : layer == kIpcNs ? CLONE_NEWIPC
           : layer == kMountNs ? CLONE_NEWNS : 0;
  if (flag == 0) return EINVAL;
  return ::unshare(flag) == 0 ? 0 : errno;
}

namespace {

// A mount point made where a bind above hid it (its folders, then the folder or an empty file);
// what exists already is left as it is. No allocation: it runs between fork and exec.
int make_mount_point(const char* target, bool directory) {
  char path[4096];
  size_t len = std::strlen(target);
  if (len >= sizeof path) return ENAMETOOLONG;
  std::memcpy(path, target, len + 1);
  for (size_t k = 1; k < len; ++k)
    if (path[k] == '/') {
      path[k] = '\0';
      ::mkdir(path, 0755);
      path[k] = '/';
    }
  if (directory) {
    ::mkdir(path, 0755);
  } else {
    int fd = ::open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }
  return 0;
}

}  // namespace

// The mount view: nothing propagates back to the host; the writable folders bound first (scratch on
// /tmp, the build folder on /tmp/kbv-ext, the shared-memory folder on /dev/shm); then every other
// mount of the host remounted read-only (nosuid/nodev/noexec kept); then a /proc of the new PID
// namespace, which lists only the worker's own processes. Run by the namespace's first process.
int setup_mounts(const Plan& plan, bool proc) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  // Every source is opened before the first bind: a scratch folder under /tmp is out of sight by
  // name once something is bound on /tmp, the Python under /root once a tmpfs covers /root. Bound
  // through /proc/self/fd/N.
  constexpr size_t kMax = 32;
  int sources[kMax];
  const size_t binds = plan.binds.size() < kMax ? plan.binds.size() : kMax;
  const size_t count = binds + plan.reveals.size() < kMax ? binds + plan.reveals.size() : kMax;
  for (size_t i = 0; i < count; ++i) {
    const Bind& b = i < binds ? plan.binds[i] : plan.reveals[i - binds];
    sources[i] = ::open(b.source.c_str(), O_PATH | O_CLOEXEC);
    if (sources[i] < 0) return errno;
  }
  for (size_t i = 0; i < count; ++i) {
    if (i == binds) {
      // The folders uid 65534 cannot search: an empty tmpfs on each, the needed paths made in it.
      for (const std::string& t : plan.tmpfs_over) {
        // Under a bound folder (a cache inside /tmp, where the scratch is now) the point is made first.
        if (int e = make_mount_point(t.c_str(), true); e != 0) return e;
        if (::mount("tmpfs", t.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) return errno;
      }
    }
    const Bind& b = i < binds ? plan.binds[i] : plan.reveals[i - binds];
    if (i >= binds)
      if (int e = make_mount_point(b.target.c_str(), b.directory); e != 0) return e;
    char via[32] = "/proc/self/fd/";
    char digits[12];
    int n = 0;
    for (int fd = sources[i]; n == 0 || fd > 0; fd /= 10) digits[n++] = static_cast<char>('0' + fd % 10);
    size_t at = std::strlen(via);
    while (n > 0) via[at++] = digits[--n];
    via[at] = '\0';
    // A bind mount is as writable as the mount its source is on (kbv's cache, /dev/shm).
    int r = ::mount(via, b.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
    int err = errno;
    ::close(sources[i]);
    if (r != 0) return err;
    if (!b.writable &&
        ::mount(nullptr, b.target.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
      return errno;
  }
  if (count == binds)
    for (const std::string& t : plan.tmpfs_over) {
      if (int e = make_mount_point(t.c_str(), true); e != 0) return e;
      if (::mount("tmpfs", t.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) return errno;
    }
  for (const std::string& t : plan.tmpfs_over)
    if (::mount(nullptr, t.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
      return errno;
  for (size_t i = 0; i < plan.remount_readonly.size(); ++i) {
    const char* point = plan.remount_readonly[i].c_str();
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | plan.remount_flags[i];
    if (::mount(nullptr, point, nullptr, flags, nullptr) == 0) continue;
    int err = errno;
    // The root must become read-only; a mount hidden under another one (ENOENT, EINVAL) is out of
    // reach anyway.
    if (std::strcmp(point, "/") == 0 || (err != ENOENT && err != EINVAL && err != EACCES)) return err;
  }
  if (proc && plan.mount_proc &&
      ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return errno;
  return 0;
}

}  // namespace kbv::sandbox
