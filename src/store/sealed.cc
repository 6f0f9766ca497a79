#include "store/sealed.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "util/fs.h"
#include "util/hash.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kbv {
namespace {

constexpr size_t kKeyBytes = 32;
constexpr const char* kSealField = "seal";

// Reads exactly kKeyBytes from `path`; empty on any failure (with `error`).
std::string read_key(const fs::path& path, std::string& error) {
  FileText t = read_file(path);
  if (!t.ok) {
    error = t.error;
    return "";
  }
  if (t.text.size() != kKeyBytes) {
    error = path.string() + " holds " + std::to_string(t.text.size()) + " bytes, expected " +
            std::to_string(kKeyBytes) + ": remove it and the cache entries sealed under it are measured again";
    return "";
  }
  return t.text;
}

}  // namespace

SealKey seal_key(const fs::path& cache_dir) {
  SealKey out;
  const fs::path path = cache_dir / ".seal-key";
  std::error_code ec;
  if (fs::exists(path, ec)) {
    out.bytes = read_key(path, out.error);
    return out;
  }
  fs::create_directories(cache_dir, ec);
  unsigned char key[kKeyBytes];
  size_t got = 0;
  while (got < kKeyBytes) {
    ssize_t n = ::getrandom(key + got, kKeyBytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out.error = std::string("getrandom: ") + std::strerror(errno);
      return out;
    }
    got += static_cast<size_t>(n);
  }
  // Written to a private temporary file, then linked into place: a concurrent kbv that got there
  // first wins (EEXIST), and both use the key on disk.
  fs::path tmp = cache_dir / (".seal-key.tmp." + std::to_string(::getpid()) + "." + hex_of(key, 8));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    out.error = "cannot create " + tmp.string() + ": " + std::strerror(errno);
    return out;
  }
  bool written = ::write(fd, key, kKeyBytes) == static_cast<ssize_t>(kKeyBytes) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written) {
    out.error = "cannot write " + tmp.string() + ": " + std::strerror(errno);
    fs::remove(tmp, ec);
    return out;
  }
  if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    out.error = "cannot create " + path.string() + ": " + std::strerror(errno);
    fs::remove(tmp, ec);
    return out;
  }
  fs::remove(tmp, ec);
  out.bytes = read_key(path, out.error);
  return out;
}

std::string seal_of(const json& entry, const std::string& key) {
  json body = entry;
  if (body.is_object()) body.erase(kSealField);
  const std::string text = body.dump();
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
            text.size(), mac, &len))
    return "";
  return hex_of(mac, len);
}

std::string write_sealed(const fs::path& path, json entry, const std::string& key) {
  if (key.empty()) return "cannot seal " + path.string() + ": no sealing key";
  entry[kSealField] = seal_of(entry, key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  return write_file_atomic(path, entry.dump(1));
}

Unsealed read_sealed(const fs::path& path, const std::string& key) {
  Unsealed out;
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  out.check = Unsealed::Check::refused;
  FileText t = read_file(path);
  if (!t.ok) {
    out.reason = t.error;
    return out;
  }
  json j = json::parse(t.text, nullptr, false);
  if (!j.is_object()) {
    out.reason = path.string() + " is not a JSON object";
    return out;
  }
  if (!j.contains(kSealField) || !j[kSealField].is_string()) {
    out.reason = path.string() + " has no seal: kbv did not write it";
    return out;
  }
  const std::string claimed = j[kSealField].get<std::string>();
  const std::string actual = key.empty() ? "" : seal_of(j, key);
  if (actual.empty() || claimed.size() != actual.size() ||
      CRYPTO_memcmp(claimed.data(), actual.data(), actual.size()) != 0) {
    out.reason = path.string() + ": the seal does not match its contents (written or edited by something other "
                 "than kbv, or sealed under another key)";
    return out;
  }
  j.erase(kSealField);
  out.check = Unsealed::Check::ok;
  out.value = std::move(j);
  return out;
}

}  // namespace kbv
