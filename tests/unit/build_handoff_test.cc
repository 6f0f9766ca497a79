// A build cache entry packed for the queue and unpacked on another host (supervisor/build_handoff.h).
#include "supervisor/build_handoff.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/hash.h"

namespace kbv {
namespace build_handoff_test {
namespace fs = std::filesystem;

struct Dirs {
  fs::path root;
  explicit Dirs(const std::string& name)
      : root(fs::temp_directory_path() / ("kbv_handoff_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~Dirs() { fs::remove_all(root); }
};

struct timespec mtime_of(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mtim;
}

TEST(BuildHandoff, PackedEntryUnpacksWithItsBytesModesAndTimes) {
  Dirs d("roundtrip");
  const fs::path from = d.root / "a" / "key", to = d.root / "b" / "key";
  fs::create_directories(from / "ext" / "kbv_ext");
  ASSERT_EQ(write_file_atomic(from / "ext" / "kbv_ext" / "kbv_ext.so", std::string("\x7f" "ELF\0\x01", 6)), "");
  ASSERT_EQ(write_file_atomic(from / "ext" / "kbv_ext" / "build.ninja", "rule cxx\n"), "");
  ASSERT_EQ(write_file_atomic(from / "result.json", R"({"ok": true, "kind": ""})"), "");
  ::chmod((from / "ext" / "kbv_ext" / "kbv_ext.so").c_str(), 0755);
  struct timespec old_times[2] = {{1700000000, 123456789}, {1700000000, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (from / "ext" / "kbv_ext" / "kbv_ext.so").c_str(), old_times, 0), 0);
  // A link the candidate left in its folder does not travel.
  fs::create_symlink("/etc/passwd", from / "ext" / "kbv_ext" / "link");

  std::string error;
  const std::string bytes = pack_build_entry(from, error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(unpack_build_entry(bytes, to), "");
  EXPECT_EQ(read_file(to / "ext" / "kbv_ext" / "kbv_ext.so").text, std::string("\x7f" "ELF\0\x01", 6));
  EXPECT_EQ(read_file(to / "ext" / "kbv_ext" / "build.ninja").text, "rule cxx\n");
  EXPECT_EQ(read_file(to / "result.json").text, R"({"ok": true, "kind": ""})");
  EXPECT_FALSE(fs::exists(fs::symlink_status(to / "ext" / "kbv_ext" / "link")));
  struct stat st {};
  ASSERT_EQ(::stat((to / "ext" / "kbv_ext" / "kbv_ext.so").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  const struct timespec t = mtime_of(to / "ext" / "kbv_ext" / "kbv_ext.so");
  EXPECT_EQ(t.tv_sec, 1700000000);
  EXPECT_EQ(t.tv_nsec, 123456789);
}

TEST(BuildHandoff, AnEntryWithoutAResultIsNotPackedAndDamagedBytesAreRefused) {
  Dirs d("refused");
  std::string error;
  fs::create_directories(d.root / "unfinished" / "ext");
  EXPECT_EQ(pack_build_entry(d.root / "unfinished", error), "");
  EXPECT_NE(error.find("result.json"), std::string::npos) << error;

  EXPECT_NE(unpack_build_entry("not an entry", d.root / "x"), "");
  fs::create_directories(d.root / "ok");
  ASSERT_EQ(write_file_atomic(d.root / "ok" / "result.json", "{}"), "");
  std::string bytes = pack_build_entry(d.root / "ok", error);
  ASSERT_EQ(error, "");
  EXPECT_NE(unpack_build_entry(bytes.substr(0, bytes.size() - 1), d.root / "cut"), "");
  EXPECT_FALSE(fs::exists(d.root / "cut" / "result.json"));
  // A path that climbs out of the entry.
  std::string evil = bytes;
  const size_t at = evil.find("result.json");
  ASSERT_NE(at, std::string::npos);
  evil.replace(at, 11, "../../pwned");
  EXPECT_NE(unpack_build_entry(evil, d.root / "evil" / "key"), "");
  EXPECT_FALSE(fs::exists(d.root / "pwned"));
}

TEST(BuildHandoff, AHugeOrWorldWritableBuildFolderIsNotTakenAsItIs) {
  // What a candidate's build can leave in its ext folder: a file far larger than any extension
  // (sparse here, so the test writes nothing), a file and a folder writable by everyone.
  Dirs d("hostile");
  const fs::path from = d.root / "a" / "key", to = d.root / "b" / "key";
  fs::create_directories(from / "ext" / "kbv_ext" / "open");
  ASSERT_EQ(write_file_atomic(from / "result.json", R"({"ok": true, "kind": ""})"), "");
  ASSERT_EQ(write_file_atomic(from / "ext" / "kbv_ext" / "kbv_ext.so", "so"), "");
  ::chmod((from / "ext" / "kbv_ext" / "kbv_ext.so").c_str(), 0777);
  ::chmod((from / "ext" / "kbv_ext" / "open").c_str(), 0777);
  std::string error;
  std::string bytes = pack_build_entry(from, error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(unpack_build_entry(bytes, to), "");
  struct stat st {};
  ASSERT_EQ(::stat((to / "ext" / "kbv_ext" / "kbv_ext.so").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u) << "no write bit for others on the eval host";
  ASSERT_EQ(::stat((to / "ext" / "kbv_ext" / "open").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);

  ASSERT_EQ(write_file_atomic(from / "ext" / "kbv_ext" / "huge", ""), "");
  fs::resize_file(from / "ext" / "kbv_ext" / "huge", 64ULL << 30);  // 64 GiB, a hole
  bytes = pack_build_entry(from, error);
  EXPECT_EQ(bytes, "");
  EXPECT_NE(error.find("not published"), std::string::npos) << error;
  // The limit is on the sum of the files.
  fs::remove(from / "ext" / "kbv_ext" / "huge");
  ASSERT_EQ(write_file_atomic(from / "ext" / "kbv_ext" / "a", std::string(600, 'a')), "");
  ASSERT_EQ(write_file_atomic(from / "ext" / "kbv_ext" / "b", std::string(600, 'b')), "");
  EXPECT_EQ(pack_build_entry(from, error, 1000), "");
  EXPECT_NE(error, "");
  EXPECT_NE(pack_build_entry(from, error, 4096), "");
  EXPECT_EQ(error, "");
}

TEST(BuildHandoff, PublishedBuildIsFetchedIntoAnotherCache) {
  Dirs d("queue");
  std::string error;
  auto q = queue::Queue::open("sqlite:" + (d.root / "q.db").string(), error);
  ASSERT_NE(q, nullptr) << error;
  const std::string key = sha256_hex("a build key");
  const fs::path from = d.root / "host1" / key, to = d.root / "host2" / key;
  fs::create_directories(from / "ext");
  ASSERT_EQ(write_file_atomic(from / "ext" / "m.so", "binary"), "");
  ASSERT_EQ(write_file_atomic(from / "result.json", R"({"ok": true})"), "");
  EXPECT_FALSE(fetch_build(*q, key, to, error)) << "nothing published yet";
  EXPECT_EQ(error, "");
  ASSERT_EQ(publish_build(*q, key, from), "");
  ASSERT_TRUE(fetch_build(*q, key, to, error)) << error;
  EXPECT_EQ(read_file(to / "ext" / "m.so").text, "binary");
  EXPECT_FALSE(fetch_build(*q, key, to, error)) << "already in this cache: nothing fetched";
  EXPECT_EQ(error, "");
}

}  // namespace build_handoff_test
}  // namespace kbv
