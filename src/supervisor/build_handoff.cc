// Packing a build cache entry for the queue and back (build_handoff.h).
#include "supervisor/build_handoff.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/hash.h"

namespace kbv {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "kbv-build-entry-1\n";
constexpr const char* kResult = "result.json";

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
bool take(const std::string& in, size_t& at, T& value) {
  if (in.size() - at < sizeof(T)) return false;
  std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}

// One entry: kind ('d' folder, 'f' file), path, mode, mtime (s, ns), size and bytes.
std::string add(std::string& out, char kind, const std::string& rel, const fs::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return fmt::format("cannot stat {}: {}", file.string(), std::strerror(errno));
  std::string bytes;
  if (kind == 'f') {
    FileText text = read_file(file);
    if (!text.ok) return text.error;
    bytes = std::move(text.text);
  }
  out += kind;
  put<uint32_t>(out, static_cast<uint32_t>(rel.size()));
  out += rel;
  put<uint32_t>(out, static_cast<uint32_t>(st.st_mode & 07777));
  put<int64_t>(out, static_cast<int64_t>(st.st_mtim.tv_sec));
  put<int64_t>(out, static_cast<int64_t>(st.st_mtim.tv_nsec));
  put<uint64_t>(out, static_cast<uint64_t>(bytes.size()));
  out += bytes;
  return "";
}

bool plain_relative(const std::string& rel) {
  if (rel.empty() || rel.front() == '/' || rel.find('\0') != std::string::npos) return false;
  for (const auto& part : fs::path(rel)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

struct Item {
  char kind = 0;
  std::string rel;
  uint32_t mode = 0;
  int64_t sec = 0, nsec = 0;
  std::string bytes;
};

}  // namespace

std::string pack_build_entry(const fs::path& dir, std::string& error, uint64_t max_bytes) {
  error.clear();
  std::string out = kMagic;
  const fs::path ext = dir / "ext";
  std::error_code ec;
  uint64_t total = 0;  // file contents so far: sizes checked before anything is read
  if (fs::is_directory(ext, ec)) {
    for (auto it = fs::recursive_directory_iterator(ext, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      const fs::file_status st = it->symlink_status(ec);
      if (ec) break;
      const std::string rel = fs::relative(it->path(), dir, ec).string();
      if (ec) break;
      if (fs::is_directory(st)) {
        error = add(out, 'd', rel, it->path());
      } else if (fs::is_regular_file(st)) {
        // torch's lock file of a finished build (none is left unless a build was killed) is not part of it
        if (it->path().filename() == "lock") continue;
        total += fs::file_size(it->path(), ec);
        if (ec) break;
        if (total > max_bytes) {
          error = fmt::format("{} holds more than {} bytes of files (at {}): not published, an eval host builds it",
                              dir.string(), max_bytes, rel);
          return "";
        }
        error = add(out, 'f', rel, it->path());
      }
      if (!error.empty()) return "";
    }
    if (ec) {
      error = fmt::format("cannot list {}: {}", ext.string(), ec.message());
      return "";
    }
  }
  if (!fs::is_regular_file(dir / kResult, ec)) {
    error = fmt::format("{} holds no finished build ({} is missing)", dir.string(), kResult);
    return "";
  }
  error = add(out, 'f', kResult, dir / kResult);  // last: unpacked last
  if (!error.empty()) return "";
  return out;
}

std::string unpack_build_entry(const std::string& bytes, const fs::path& dir) {
  const std::string magic = kMagic;
  if (bytes.compare(0, magic.size(), magic) != 0) return "not a packed kbv build entry";
  std::vector<Item> items;
  size_t at = magic.size();
  while (at < bytes.size()) {
    Item item;
    item.kind = bytes[at++];
    uint32_t n = 0;
    uint64_t size = 0;
    if ((item.kind != 'd' && item.kind != 'f') || !take(bytes, at, n) || bytes.size() - at < n) {
      return fmt::format("packed build entry: a damaged item at byte {}", at);
    }
    item.rel = bytes.substr(at, n);
    at += n;
    if (!take(bytes, at, item.mode) || !take(bytes, at, item.sec) || !take(bytes, at, item.nsec) ||
        !take(bytes, at, size) || bytes.size() - at < size) {
      return fmt::format("packed build entry: '{}' is cut short", item.rel);
    }
    item.bytes = bytes.substr(at, size);
    at += size;
    const bool in_ext = item.rel == "ext" || item.rel.rfind("ext/", 0) == 0;
    if (!plain_relative(item.rel) || !(in_ext || (item.rel == kResult && item.kind == 'f'))) {
      return fmt::format("packed build entry: '{}' is outside ext/ and result.json", item.rel);
    }
    items.push_back(std::move(item));
  }
  if (items.empty() || items.back().rel != kResult) return "packed build entry: result.json is missing";

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fmt::format("cannot create {}: {}", dir.string(), ec.message());
  FileLock lock(dir / ".kbv-lock");
  if (fs::exists(dir / kResult, ec)) return "";  // there already (built or fetched meanwhile)
  fs::remove_all(dir / "ext", ec);
  auto set_time = [](const fs::path& p, const Item& item) {
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = static_cast<time_t>(item.sec);
    times[0].tv_nsec = times[1].tv_nsec = static_cast<long>(item.nsec);
    ::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW);
  };
  for (const Item& item : items) {
    const fs::path target = dir / item.rel;
    if (item.kind == 'd') {
      fs::create_directories(target, ec);
      if (ec) return fmt::format("cannot create {}: {}", target.string(), ec.message());
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    if (std::string why = write_file_atomic(target, item.bytes); !why.empty()) return why;
    ::chmod(target.c_str(), static_cast<mode_t>(item.mode & 0755));
    set_time(target, item);
  }
  // Folders last: writing their files moved their times.
  for (const Item& item : items) {
    if (item.kind == 'd') {
      ::chmod((dir / item.rel).c_str(), static_cast<mode_t>(item.mode & 0755));
      set_time(dir / item.rel, item);
    }
  }
  return "";
}

std::string publish_build(queue::Queue& queue, const std::string& key, const fs::path& dir) {
  std::string error;
  auto existing = queue.get_build(key, error);
  if (!error.empty()) return error;
  if (existing) return "";
  std::string bytes = pack_build_entry(dir, error);
  if (!error.empty()) return error;
  const std::string sha = sha256_hex(bytes);
  if (!queue.put_blob(sha, bytes, error)) return error.empty() ? "the blob was not stored" : error;
  if (!queue.put_build(key, sha, error)) return error.empty() ? "the build was not recorded" : error;
  return "";
}

bool fetch_build(queue::Queue& queue, const std::string& key, const fs::path& dir, std::string& error) {
  error.clear();
  std::error_code ec;
  if (fs::exists(dir / kResult, ec)) return false;
  auto blob_name = queue.get_build(key, error);
  if (!blob_name) return false;
  auto bytes = queue.get_blob(*blob_name, error);
  if (!bytes) {
    if (error.empty()) error = fmt::format("build {} names blob {}, which the queue does not hold", key, *blob_name);
    return false;
  }
  if (sha256_hex(*bytes) != *blob_name) {
    error = fmt::format("blob {} of build {} does not hash to its name", *blob_name, key);
    return false;
  }
  error = unpack_build_entry(*bytes, dir);
  return error.empty();
}

}  // namespace kbv
