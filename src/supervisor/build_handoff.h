// Built extensions through the queue (kbv worker --role build|eval, docs/QUEUE.md "Build and eval
// workers"): a build cache entry (cache_dir/build/<key>: ext/ and result.json) packed into one
// content-addressed blob, recorded under its build key, and unpacked into another host's cache at
// the same key, so that host's build_cached finds it as if it had built it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "queue/queue.h"

namespace kbv {

// The entry's regular files and folders (symbolic links and other files are left out: the ext
// folder is written by candidate code), each with its mode and modification time (ninja decides
// by them whether the extension is up to date). Error: a message, with empty bytes. An entry of
// more than `max_bytes` of file contents (a candidate's build can write files of up to 16 GiB,
// the sandbox's limit) is not packed: it is never read into memory, and the eval host builds it.
constexpr uint64_t kMaxPackedBuildBytes = 1ULL << 30;
std::string pack_build_entry(const std::filesystem::path& dir, std::string& error,
                             uint64_t max_bytes = kMaxPackedBuildBytes);

// Writes the packed entry into `dir` (under its .kbv-lock, the lock build_cached takes):
// ext/ first, result.json last, so an entry interrupted midway is not a cached outcome. Paths that
// are absolute or climb out with ".." are refused; modes keep no write bit for group or others
// (candidate code chose them). "" or the error.
std::string unpack_build_entry(const std::string& bytes, const std::filesystem::path& dir);

// Publishes the entry under `key` (a blob, then the key's row; a key already there is left as it
// is). "" or the error.
std::string publish_build(queue::Queue& queue, const std::string& key, const std::filesystem::path& dir);

// The entry of `key` from the queue into `dir` when `dir` has no result.json yet. true: it is
// there now (from the queue); false with an empty error: the queue has no build of this key.
bool fetch_build(queue::Queue& queue, const std::string& key, const std::filesystem::path& dir, std::string& error);

}  // namespace kbv
