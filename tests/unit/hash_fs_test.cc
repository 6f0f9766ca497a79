#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "util/fs.h"
#include "util/hash.h"

namespace kbv {
namespace hash_fs_test {

std::filesystem::path make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kbv_fs_test.XXXXXX").string();
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr);
  return tmpl;
}

TEST(Hash, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Hash, BinaryDataIsHashedWhole) {
  std::string with_nul("a\0b", 3);
  EXPECT_NE(sha256_hex(with_nul), sha256_hex("a"));
  EXPECT_EQ(sha256_hex(with_nul).size(), 64u);
}

TEST(Hash, PartsAreLengthPrefixed) {
  EXPECT_NE(sha256_hex_parts({"ab", "c"}), sha256_hex_parts({"a", "bc"}));
  EXPECT_NE(sha256_hex_parts({"abc"}), sha256_hex_parts({"abc", ""}));
  EXPECT_NE(sha256_hex_parts({}), sha256_hex_parts({""}));
  EXPECT_NE(sha256_hex_parts({"abc"}), sha256_hex("abc"));
  EXPECT_EQ(sha256_hex_parts({"ab", "c"}), sha256_hex_parts({"ab", "c"}));
}

TEST(Fs, AtomicWriteThenRead) {
  auto dir = make_temp_dir();
  auto file = dir / "result.json";
  EXPECT_EQ(write_file_atomic(file, "{\"a\": 1}\n"), "");
  FileText got = read_file(file);
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.text, "{\"a\": 1}\n");

  // Overwrite replaces the whole file, and no temporary file is left behind.
  std::string big(200000, 'x');
  EXPECT_EQ(write_file_atomic(file, big), "");
  got = read_file(file);
  ASSERT_TRUE(got.ok);
  EXPECT_EQ(got.text, big);
  EXPECT_EQ(write_file_atomic(file, ""), "");
  got = read_file(file);
  ASSERT_TRUE(got.ok);
  EXPECT_EQ(got.text, "");
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);

  // Permissions follow the umask like an ordinary file, not mkstemp's 0600.
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IRUSR);
  EXPECT_TRUE(st.st_mode & S_IWUSR);
  std::filesystem::remove_all(dir);
}

TEST(Fs, WriteIntoMissingFolderNamesPathAndReason) {
  auto dir = make_temp_dir();
  auto file = dir / "no_such_folder" / "x.json";
  std::string error = write_file_atomic(file, "data");
  EXPECT_EQ(error, "cannot write " + file.string() + ": No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST(Fs, ReadMissingFileNamesPathAndReason) {
  auto dir = make_temp_dir();
  FileText got = read_file(dir / "absent.txt");
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.error, "cannot read " + (dir / "absent.txt").string() + ": No such file or directory");
  got = read_file(dir);  // a folder
  EXPECT_FALSE(got.ok);
  EXPECT_NE(got.error.find("Is a directory"), std::string::npos) << got.error;
  std::filesystem::remove_all(dir);
}

TEST(Fs, RelativePathInCurrentFolder) {
  auto dir = make_temp_dir();
  auto old = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  EXPECT_EQ(write_file_atomic("plain.txt", "hello"), "");
  FileText got = read_file("plain.txt");
  std::filesystem::current_path(old);
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.text, "hello");
  std::filesystem::remove_all(dir);
}

// Another open file description of the same path can take the flock only once FileLock is gone.
TEST(Fs, FileLockIsExclusiveUntilDestroyed) {
  auto dir = make_temp_dir();
  auto path = dir / ".kbv-lock";
  int other = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(other, 0);
  {
    FileLock lock(path);
    ASSERT_TRUE(lock.ok()) << lock.error();
    EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0) << "the lock must be exclusive";
  }
  EXPECT_EQ(::flock(other, LOCK_EX | LOCK_NB), 0) << "destroying the FileLock releases it";
  ::close(other);
  FileLock missing(dir / "no-such-folder" / "lock");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("no-such-folder"), std::string::npos) << missing.error();
  std::filesystem::remove_all(dir);
}

// torch's per-extension `lock` files are removed; nothing else is.
TEST(Fs, StaleTorchLocksAreRemovedFromExtensionFolders) {
  auto dir = make_temp_dir();
  for (const char* ext : {"a", "b", "c"}) std::filesystem::create_directories(dir / ext);
  EXPECT_EQ(write_file_atomic(dir / "a" / "lock", ""), "");
  EXPECT_EQ(write_file_atomic(dir / "b" / "lock", ""), "");
  EXPECT_EQ(write_file_atomic(dir / "b" / "build.ninja", "x"), "");
  EXPECT_EQ(write_file_atomic(dir / "lock", ""), "");  // not an extension folder's
  EXPECT_EQ(remove_stale_torch_locks(dir), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "a" / "lock"));
  EXPECT_FALSE(std::filesystem::exists(dir / "b" / "lock"));
  EXPECT_TRUE(std::filesystem::exists(dir / "b" / "build.ninja"));
  EXPECT_TRUE(std::filesystem::exists(dir / "lock"));
  EXPECT_EQ(remove_stale_torch_locks(dir / "missing"), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace hash_fs_test
}  // namespace kbv
