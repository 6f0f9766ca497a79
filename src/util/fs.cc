#include "util/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

namespace kbv {
namespace {

std::string strerror_text(int err) { return std::strerror(err); }

// Closes an fd on scope exit unless released.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

FileText read_file(const std::filesystem::path& path) {
  FileText result;
  auto fail = [&](int err) {
    result.ok = false;
    result.text.clear();
    result.error = "cannot read " + path.string() + ": " + strerror_text(err);
    return result;
  };
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) return fail(errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    result.text.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno);
    }
    if (n == 0) break;
    result.text.append(buffer, static_cast<size_t>(n));
  }
  result.ok = true;
  return result;
}

std::string write_file_atomic(const std::filesystem::path& path, const std::string& text) {
  const std::string target = path.string();
  auto fail = [&](int err) { return "cannot write " + target + ": " + strerror_text(err); };

  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  if (path.filename().empty()) return fail(EISDIR);

  // A name unique to this process and call; O_EXCL guards against anything else.
  static std::atomic<unsigned long> counter{0};
  std::string temp;
  int raw = -1;
  for (int attempt = 0; attempt < 100 && raw < 0; ++attempt) {
    unsigned long salt = counter.fetch_add(1) ^
                         (std::hash<std::thread::id>{}(std::this_thread::get_id()) << 20);
    temp = (dir / ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                   std::to_string(salt)))
               .string();
    raw = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (raw < 0 && errno != EEXIST) return fail(errno);
  }
  if (raw < 0) return fail(EEXIST);
  Fd fd(raw);

  auto abandon = [&](int err) {
    ::unlink(temp.c_str());
    return fail(err);
  };
  if (!write_all(fd.fd, text.data(), text.size())) return abandon(errno);
  if (::fsync(fd.fd) != 0) return abandon(errno);
  if (::close(fd.release()) != 0) return abandon(errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) return abandon(errno);

  // Make the rename itself durable; a failure here does not undo a completed write.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

FileLock::FileLock(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = "cannot open " + path.string() + ": " + std::strerror(errno);
    return;
  }
  int r;
  do {
    r = ::flock(fd_, LOCK_EX);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    error_ = "cannot lock " + path.string() + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the lock
}

int remove_stale_torch_locks(const std::filesystem::path& extensions_dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(extensions_dir, ec)) {
    if (!entry.is_directory(ec)) continue;
    std::filesystem::path lock = entry.path() / "lock";
    if (std::filesystem::is_regular_file(lock, ec) && std::filesystem::remove(lock, ec)) ++removed;
  }
  return removed;
}

}  // namespace kbv
