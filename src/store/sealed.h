// Cache entries only the supervisor writes (DESIGN.md, "What the supervisor trusts"): baselines,
// the device calibration and build outcomes are JSON files sealed with an HMAC-SHA256 under a key
// kept beside them (CACHE/.seal-key, 32 random bytes, mode 0600). No candidate's process can read
// that key: the sandbox's Landlock rules leave the cache folder out, and when kbv is root the
// candidate runs as nobody. An entry written by anything else, edited, or sealed under another
// key fails the check; the caller refuses it, measures again and says so.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kbv {

// The sealing key of a cache folder, created (atomically, 0600) on first use.
struct SealKey {
  std::string bytes;  // empty when it could not be read or made
  std::string error;  // then why, naming the file
};
SealKey seal_key(const std::filesystem::path& cache_dir);

// The seal of `entry` (its "seal" field ignored): lowercase hex HMAC-SHA256 of its compact JSON.
std::string seal_of(const nlohmann::json& entry, const std::string& key);

// Writes `entry` with its "seal" field set, atomically. Empty string or the error.
std::string write_sealed(const std::filesystem::path& path, nlohmann::json entry, const std::string& key);

struct Unsealed {
  enum class Check { ok, absent, refused } check = Check::absent;
  nlohmann::json value;  // ok: the entry without its seal
  std::string reason;    // refused: why ("not JSON", "no seal", "the seal does not match"), naming the file
};
Unsealed read_sealed(const std::filesystem::path& path, const std::string& key);

}  // namespace kbv
