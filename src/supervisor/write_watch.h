// What a confined candidate holds in files, bounded from outside (DESIGN.md "Sandbox"): RLIMIT_FSIZE
// bounds one file, not their number, and its /dev/shm folder is on the host's tmpfs (RAM), its /tmp
// on the host's disk. A thread of the supervisor sums, every 250 ms, the bytes of the files in those
// folders (less what its reference maps there: the reference's own tensors) and of the files its
// processes keep open or mapped after unlinking them (memfds, SysV segments); past the cap it kills
// the worker's processes and says so.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kbv {

// The default cap (--write-cap-mib): a candidate's scratch files, shared-memory files and unlinked
// files together.
inline constexpr uint64_t kDefaultWriteCapBytes = uint64_t{4} << 30;
// The largest --write-cap-mib accepted (1 PiB): the cap in bytes stays far from uint64's end.
inline constexpr uint64_t kMaxWriteCapMib = uint64_t{1} << 30;

// The bytes of /dev/shm files process `pid` maps, by file name (a mapping's length, summed): a
// worker maps every buffer it exports until it releases it. nullopt when its maps cannot be read.
std::optional<std::map<std::string, uint64_t>> shm_mapped_bytes(int pid);

struct HeldBytes {
  uint64_t folders = 0;   // files in the watched folders, each at least one 4 KiB page
  uint64_t unlinked = 0;  // files the processes hold open or mapped, unlinked (memfds included)
  uint64_t entries = 0;   // folder entries seen
  bool too_deep = false;    // folders nested deeper than kbv walks (128): counted as over any cap
  bool unreadable = false;  // an entry, a folder or a process's open files kbv could not see: the same
  uint64_t total() const { return too_deep || unreadable ? UINT64_MAX : folders + unlinked; }
};

// What `pids` hold: the allocated bytes (st_blocks, not a sparse size) of every entry under
// `folders` (symbolic links not followed; an entry counts at least 4 KiB, so that a flood of empty
// files counts too) less `exempt[name]` for a file of that name directly in a folder, plus each
// unlinked file open in or mapped by one of `pids`, once per inode (a shared anonymous mapping,
// "/dev/zero (deleted)", is memory and not counted here).
HeldBytes held_bytes(const std::vector<std::filesystem::path>& folders,
                     const std::map<std::string, uint64_t>& exempt, const std::vector<int>& pids);

class WriteWatch {
 public:
  struct Target {
    std::vector<std::filesystem::path> folders;  // its /tmp, /tmp/kbv-ext and /dev/shm folders, as the host sees them
    int group = 0;                               // the worker's process group
    std::string pid_ns;                          // its PID namespace ("" without one)
    int reference = 0;                           // the reference sharing the /dev/shm folder (0: none)
    uint64_t cap = kDefaultWriteCapBytes;
    std::chrono::milliseconds every{250};
  };
  explicit WriteWatch(Target target);
  ~WriteWatch();
  WriteWatch(const WriteWatch&) = delete;
  WriteWatch& operator=(const WriteWatch&) = delete;
  // Stops the thread (before the group's pid can be reused). Idempotent.
  void stop();
  // Keeps the watch's thread off `cpus` (the candidate's pinned budget) where kbv has other CPUs:
  // its look between the candidate's calls would leave the next call a colder cache.
  void avoid_cpus(std::vector<int> cpus);
  // Why it killed the worker, or "" while it has not.
  std::string tripped() const;

 private:
  void run();
  Target t_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string tripped_;
  std::vector<int> kbv_cpus_;  // the affinity of the thread that made the watch
  std::vector<int> avoid_;
  bool avoid_changed_ = false;
  std::thread thread_;
};

}  // namespace kbv
