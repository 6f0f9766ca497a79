// Small file helpers whose failures are values with a message naming the path.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace kbv {

struct FileText {
  bool ok = false;
  std::string text;   // the contents when ok
  std::string error;  // "cannot read <path>: <strerror>" when not ok
};

FileText read_file(const std::filesystem::path& path);

// Writes to a temporary file in the same folder, fsyncs it, renames it over `path`.
// A reader never sees a half-written file. Returns an empty string or an error message.
std::string write_file_atomic(const std::filesystem::path& path, const std::string& text);

// An exclusive flock(2) on `path` (created if missing), held until destruction. The kernel drops
// it when the process dies, so unlike a lock file it is never left stale. Blocks until taken.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }  // why not ok

 private:
  int fd_ = -1;
  std::string error_;
};

// torch.utils.cpp_extension's `lock` files (one per extension folder under `extensions_dir`),
// which a build or load killed midway leaves behind: every later load of that extension then
// waits on it forever. Only safe while holding the FileLock every kbv user of the folder takes.
// Returns how many were removed.
int remove_stale_torch_locks(const std::filesystem::path& extensions_dir);

}  // namespace kbv
