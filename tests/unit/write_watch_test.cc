// What a confined candidate's files hold, seen from outside (supervisor/write_watch.h): files in
// its folders (allocated bytes, not sparse sizes), files it unlinked but keeps open or mapped,
// memfds, and the watch that kills a process group past its cap.
#include "supervisor/write_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/sched.h"

namespace kbv {
namespace write_watch_test {
namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr uint64_t MiB = uint64_t{1} << 20;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kbv-write-watch-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_bytes(int fd, uint64_t bytes) {
  std::vector<char> block(MiB, 'x');
  for (uint64_t done = 0; done < bytes; done += MiB) ASSERT_EQ(::write(fd, block.data(), MiB), ssize_t(MiB));
}

void write_file(const fs::path& path, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  write_bytes(fd, bytes);
  ::close(fd);
}

// A child in a process group of its own that runs `hold` and then waits to be killed; the parent
// reads a byte from the child once `hold` is done.
struct Holder {
  int pid = -1;
  template <class F> explicit Holder(F hold) {
    int p[2];
    if (::pipe(p) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::close(p[0]);
      hold();
      char c = 'k';
      if (::write(p[1], &c, 1) != 1) _exit(3);
      for (;;) ::pause();
    }
    ::close(p[1]);
    char c = 0;
    if (::read(p[0], &c, 1) != 1) pid = -1;
    ::close(p[0]);
  }
  ~Holder() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

TEST(WriteWatch, FilesCountTheirAllocatedBytesAndTheReferencesMappingsAreExempt) {
  const fs::path dir = fresh_dir("folders");
  write_file(dir / "a", 8 * MiB);
  fs::create_directories(dir / "sub" / "deeper");
  write_file(dir / "sub" / "deeper" / "b", 4 * MiB);
  {  // a 1 GiB sparse file allocates almost nothing
    int fd = ::open((dir / "sparse").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 1024 * MiB), 0);
    ::close(fd);
  }
  HeldBytes h = held_bytes({dir}, {}, {});
  EXPECT_GE(h.folders, 12 * MiB);
  EXPECT_LT(h.folders, 13 * MiB) << "the sparse file counted its size, not its blocks";
  EXPECT_EQ(h.unlinked, 0u);
  EXPECT_EQ(h.entries, 5u);
  // The reference maps 6 MiB of "a": only the rest is the candidate's. A name deeper down is not exempt.
  HeldBytes exempt = held_bytes({dir}, {{"a", 6 * MiB}, {"b", 4 * MiB}}, {});
  EXPECT_GE(exempt.folders, 6 * MiB);
  EXPECT_LT(exempt.folders, 7 * MiB);
  fs::remove_all(dir);
}

TEST(WriteWatch, AFloodOfEmptyFilesCountsAPageEach) {
  const fs::path dir = fresh_dir("flood");
  for (int i = 0; i < 1000; ++i) std::ofstream(dir / ("f" + std::to_string(i)));
  HeldBytes h = held_bytes({dir}, {}, {});
  EXPECT_EQ(h.entries, 1000u);
  EXPECT_GE(h.folders, 1000 * uint64_t{4096});
  fs::remove_all(dir);
}

// A folder the candidate closed (mode 000, or readable but not searchable) still counts: kbv opens
// its scratch up again when it is the owner and reads it anyway as root.
TEST(WriteWatch, AClosedFolderIsCountedNotSkipped) {
  const fs::path dir = fresh_dir("closed");
  fs::create_directories(dir / "shut");
  write_file(dir / "shut" / "a", 8 * MiB);
  fs::create_directories(dir / "list-only");
  write_file(dir / "list-only" / "b", 4 * MiB);
  fs::permissions(dir / "shut", fs::perms::none);
  fs::permissions(dir / "list-only", fs::perms::owner_read);
  HeldBytes h = held_bytes({dir}, {}, {});
  EXPECT_FALSE(h.unreadable);
  EXPECT_GE(h.folders, 12 * MiB);
  fs::permissions(dir / "shut", fs::perms::owner_all);
  fs::permissions(dir / "list-only", fs::perms::owner_all);
  fs::remove_all(dir);
}

TEST(WriteWatch, FoldersNestedTooDeepCountAsOverAnyCap) {
  const fs::path dir = fresh_dir("deep");
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < 200 && fd >= 0; ++i) {  // by openat: past what a path could name
    ASSERT_EQ(::mkdirat(fd, "d", 0700), 0);
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(fd);
    fd = next;
  }
  ::close(fd);
  HeldBytes h = held_bytes({dir}, {}, {});
  EXPECT_TRUE(h.too_deep);
  EXPECT_EQ(h.total(), UINT64_MAX);
  fs::remove_all(dir);
}

// Unlinked files kept open, a memfd, and a memfd mapped and closed: none is in a folder, each is held.
TEST(WriteWatch, UnlinkedOpenAndMappedFilesOfTheProcessesCount) {
  const fs::path dir = fresh_dir("unlinked");
  Holder holder([&] {
    int fd = ::open((dir / "gone").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    write_bytes(fd, 8 * MiB);
    ::unlink((dir / "gone").c_str());  // kept open
    int m = ::memfd_create("kbv-test", MFD_CLOEXEC);
    write_bytes(m, 16 * MiB);  // kept open
    int mapped = ::memfd_create("kbv-test-mapped", MFD_CLOEXEC);
    if (::ftruncate(mapped, 32 * MiB) != 0) _exit(4);
    void* at = ::mmap(nullptr, 32 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, mapped, 0);
    if (at == MAP_FAILED) _exit(5);
    std::memset(at, 1, 32 * MiB);
    ::close(mapped);  // held by its mapping only
  });
  ASSERT_GT(holder.pid, 0);
  HeldBytes h = held_bytes({dir}, {}, {holder.pid});
  EXPECT_EQ(h.folders, 0u) << "the folder is empty: its file was unlinked";
  EXPECT_GE(h.unlinked, 56 * MiB);
  EXPECT_LT(h.unlinked, 57 * MiB);
  fs::remove_all(dir);
}

// A process group that writes past the cap is killed, and the watch says why; one under it is not.
TEST(WriteWatch, AGroupPastTheCapIsKilledAndOneUnderItIsNot) {
  const fs::path dir = fresh_dir("kill");
  auto run = [&](uint64_t bytes, uint64_t cap, std::string& why) {
    Holder holder([&] { write_file(dir / "fill", bytes); });
    if (holder.pid <= 0) return false;
    WriteWatch::Target t;
    t.folders = {dir};
    t.group = holder.pid;
    t.cap = cap;
    t.every = milliseconds(20);
    WriteWatch watch(t);
    int status = 0;
    bool died = false;
    for (int i = 0; i < 100 && !died; ++i) {
      died = ::waitpid(holder.pid, &status, WNOHANG) == holder.pid;
      if (!died) std::this_thread::sleep_for(milliseconds(10));
    }
    watch.stop();
    why = watch.tripped();
    if (died) holder.pid = -1;
    fs::remove(dir / "fill");
    return died && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  };
  std::string why;
  EXPECT_TRUE(run(24 * MiB, 16 * MiB, why));
  EXPECT_NE(why.find("over the cap of"), std::string::npos) << why;
  EXPECT_FALSE(run(8 * MiB, 16 * MiB, why)) << why;
  EXPECT_EQ(why, "");
  fs::remove_all(dir);
}

// The watch's thread leaves the candidate's CPUs to it where kbv has others, and goes back when
// the candidate is unpinned.
TEST(WriteWatch, ItsThreadKeepsOffTheCandidatesCpus) {
  const std::vector<int> mine = affinity_of(0);
  if (mine.size() < 2) GTEST_SKIP() << "needs 2 CPUs in kbv's affinity set";
  const fs::path dir = fresh_dir("cpus");
  WriteWatch::Target t;
  t.folders = {dir};
  t.group = 0;  // no process: only the thread's own placement is looked at
  t.every = milliseconds(5);
  auto threads_off = [&](int cpu) {
    int off = 0;
    for (const auto& e : fs::directory_iterator("/proc/self/task")) {
      const std::vector<int> a = affinity_of(std::stoi(e.path().filename().string()));
      if (!a.empty() && std::find(a.begin(), a.end(), cpu) == a.end()) ++off;
    }
    return off;
  };
  WriteWatch watch(t);
  watch.avoid_cpus({mine[0]});
  int off = 0;
  for (int i = 0; i < 100 && off == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
    off = threads_off(mine[0]);
  }
  EXPECT_EQ(off, 1) << "the watch's thread did not leave CPU " << mine[0];
  watch.avoid_cpus({});
  for (int i = 0; i < 100 && off != 0; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
    off = threads_off(mine[0]);
  }
  EXPECT_EQ(off, 0);
  watch.stop();
  fs::remove_all(dir);
}

}  // namespace write_watch_test
}  // namespace kbv
