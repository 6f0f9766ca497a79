#include "supervisor/write_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/sched.h"
#include "util/subprocess.h"

namespace kbv {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kPage = 4096;
constexpr int kMaxDepth = 128;

uint64_t allocated(const struct stat& st) {
  const uint64_t bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  return bytes < kPage ? kPage : bytes;
}

// A folder the candidate closed to its owner (mode 000 or r--): kbv, the same uid when it is not
// root, opens it up again (it is the candidate's scratch); root reads it anyway.
void open_up(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU && st.st_uid == ::geteuid())
    ::fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
}

// A sub-folder, opened (after opening it up if it was closed); -1 and `held.unreadable` when it
// stays closed.
int open_folder(int parent, const char* name, HeldBytes& held) {
  int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) {
    struct stat st {};
    if (::fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      ::fchmodat(parent, name, (st.st_mode & 07777) | S_IRWXU, 0);
    fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0 && errno != ENOENT) held.unreadable = true;
  return fd;
}

// Every entry under the folder open as `fd` (fstatat without following links; openat, so that no
// path length limits the depth), counted into `held`; `fd` is closed. Deeper than kMaxDepth, or an
// entry kbv cannot see, counts as over any cap: no honest kernel nests or closes its files so.
void walk(int fd, const std::map<std::string, uint64_t>& exempt, int depth, HeldBytes& held) {
  open_up(fd);
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st {};
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) held.unreadable = true;  // gone meanwhile is fine; hidden is not
      continue;
    }
    ++held.entries;
    uint64_t bytes = allocated(st);
    if (depth == 0 && S_ISREG(st.st_mode))
      if (auto it = exempt.find(e->d_name); it != exempt.end()) bytes = bytes > it->second ? bytes - it->second : 0;
    held.folders += bytes;
    if (!S_ISDIR(st.st_mode)) continue;
    if (depth + 1 >= kMaxDepth) {
      held.too_deep = true;
      continue;
    }
    const int sub = open_folder(fd, e->d_name, held);
    if (sub >= 0) walk(sub, exempt, depth + 1, held);
  }
  ::closedir(d);
}

// An unlinked file, a memfd or a SysV segment by its link text or maps path: not a shared anonymous
// mapping (memory, counted as such) nor an anonymous inode.
bool unlinked_file(const std::string& what) {
  if (what.rfind("/memfd:", 0) == 0) return true;
  const std::string suffix = " (deleted)";
  if (what.size() <= suffix.size() || what.compare(what.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  return what.rfind("/dev/zero", 0) != 0 && what.rfind("anon_inode:", 0) != 0;
}

void count_unlinked(int pid, std::set<std::pair<uint64_t, uint64_t>>& seen, HeldBytes& held) {
  const std::string fd_dir = fmt::format("/proc/{}/fd", pid);
  DIR* d = ::opendir(fd_dir.c_str());
  if (!d && (errno == EACCES || errno == EPERM)) held.unreadable = true;  // a process kbv cannot look into
  if (d) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string link = fd_dir + "/" + e->d_name;
      char target[512];
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      if (!unlinked_file(target)) continue;
      struct stat st {};
      if (::stat(link.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (!seen.emplace(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)).second) continue;
      held.unlinked += allocated(st);
    }
    ::closedir(d);
  }
  // Mapped and closed: its maps line has the device and inode, and its length bounds what is held.
  // Read with read(2) (util/fs.h), never an istream: a process that ends meanwhile fails the read.
  std::istringstream maps(read_file(fmt::format("/proc/{}/maps", pid)).text);
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos || !unlinked_file(line.substr(slash))) continue;
    uint64_t lo = 0, hi = 0, inode = 0;
    unsigned major = 0, minor = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %*s %*s %x:%x %" SCNu64, &lo, &hi, &major, &minor,
                    &inode) != 5)
      continue;
    if (!seen.emplace(static_cast<uint64_t>(makedev(major, minor)), inode).second) continue;
    held.unlinked += hi - lo;
  }
}

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

std::optional<std::map<std::string, uint64_t>> shm_mapped_bytes(int pid) {
  std::map<std::string, uint64_t> bytes;
  FileText text = read_file(fmt::format("/proc/{}/maps", pid));
  if (!text.ok) return std::nullopt;
  std::istringstream maps(text.text);
  const std::string folder = "/dev/shm/";
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find(folder);
    if (at == std::string::npos) continue;
    std::string name = line.substr(at + folder.size());
    if (const size_t sp = name.find(' '); sp != std::string::npos) name.resize(sp);  // " (deleted)"
    uint64_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && hi > lo) bytes[name] += hi - lo;
  }
  return bytes;
}

HeldBytes held_bytes(const std::vector<fs::path>& folders, const std::map<std::string, uint64_t>& exempt,
                     const std::vector<int>& pids) {
  HeldBytes held;
  for (const fs::path& f : folders) {
    if (f.empty()) continue;
    const int fd = open_folder(AT_FDCWD, f.c_str(), held);
    if (fd >= 0) walk(fd, exempt, 0, held);
  }
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (int pid : pids) count_unlinked(pid, seen, held);
  return held;
}

WriteWatch::WriteWatch(Target target) : t_(std::move(target)), kbv_cpus_(affinity_of(0)) {
  thread_ = std::thread([this] { run(); });
}

void WriteWatch::avoid_cpus(std::vector<int> cpus) {
  std::lock_guard<std::mutex> lock(mu_);
  avoid_ = std::move(cpus);
  avoid_changed_ = true;
}

WriteWatch::~WriteWatch() { stop(); }

void WriteWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string WriteWatch::tripped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tripped_;
}

void WriteWatch::run() {
  // SCHED_IDLE: a look never preempts the candidate being timed on a busy CPU (its timing would
  // pay for the watch); it runs where a CPU has room and, on a full host, still gets a sliver.
  sched_param idle{};
  ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &idle);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (avoid_changed_) {
      avoid_changed_ = false;
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : kbv_cpus_)
        if (std::find(avoid_.begin(), avoid_.end(), c) == avoid_.end()) CPU_SET(c, &set);
      if (CPU_COUNT(&set) == 0)
        for (int c : kbv_cpus_) CPU_SET(c, &set);
      if (CPU_COUNT(&set) > 0) ::sched_setaffinity(0, sizeof set, &set);  // this thread only
    }
    lock.unlock();
    const std::map<std::string, uint64_t> exempt =
        t_.reference > 0 ? shm_mapped_bytes(t_.reference).value_or(std::map<std::string, uint64_t>{})
                         : std::map<std::string, uint64_t>{};
    const HeldBytes held = held_bytes(t_.folders, exempt, group_processes(t_.group, t_.pid_ns));
    lock.lock();
    if (stopping_) break;
    if (held.total() > t_.cap) {
      if (t_.group > 0) ::kill(-t_.group, SIGKILL);  // never -0: that is kbv's own group
      for (int pid : group_processes(t_.group, t_.pid_ns)) ::kill(pid, SIGKILL);
      tripped_ = held.too_deep
                     ? fmt::format("kbv killed it: it nested folders more than {} deep in its /tmp or /dev/shm "
                                   "folder, past what kbv counts (--write-cap-mib)", kMaxDepth)
                 : held.unreadable
                     ? std::string("kbv killed it: it made a file, a folder or its open files unreadable to kbv, "
                                   "which counts what they hold (--write-cap-mib)")
                     : fmt::format("kbv killed it: its files held {} ({} in its /tmp, /tmp/kbv-ext and /dev/shm "
                                   "folders, {} entries; {} unlinked but still open or mapped), over the cap of {} "
                                   "(--write-cap-mib)",
                                   gib(held.total()), gib(held.folders), held.entries, gib(held.unlinked), gib(t_.cap));
      break;
    }
    wake_.wait_for(lock, t_.every, [this] { return stopping_; });
  }
}

}  // namespace kbv
