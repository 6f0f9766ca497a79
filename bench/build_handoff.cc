// What handing a build from a build worker to an eval worker costs the queue
// (docs/results/2026-12-05-queue.md, "Build handoff"): a real build cache entry
// (CACHE/build/<key>: ext/ and result.json) packed, published (put_blob + put_build) and fetched
// (get_build + get_blob + unpack into another folder), ROUNDS times, each round under a new key
// and with bytes made distinct so no put is a no-op. Prints the medians in milliseconds.
//   kbv_handoff_bench sqlite:/tmp/dir/q.db | postgresql://...  ENTRY_DIR [ROUNDS]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "supervisor/build_handoff.h"
#include "util/fs.h"
#include "util/hash.h"

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kbv_handoff_bench QUEUE_URL ENTRY_DIR [ROUNDS]\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string url = argv[1];
  const fs::path entry = argv[2];
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 20;
  std::string error;
  auto q = kbv::queue::Queue::open(url, error);
  if (!q) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  const fs::path out = fs::temp_directory_path() / ("kbv_handoff_bench_" + std::to_string(::getpid()));
  std::vector<double> pack, publish, fetch;
  size_t bytes = 0;
  for (int i = 0; i < rounds; ++i) {
    auto t = Clock::now();
    std::string packed = kbv::pack_build_entry(entry, error);
    pack.push_back(ms_since(t));
    if (!error.empty()) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    bytes = packed.size();
    // A copy of the entry with one byte of its own: a blob the queue does not hold yet.
    const fs::path copy = out / "src" / std::to_string(i);
    if (std::string why = kbv::unpack_build_entry(packed, copy); !why.empty()) {
      std::fprintf(stderr, "%s\n", why.c_str());
      return 1;
    }
    kbv::write_file_atomic(copy / "ext" / ".round", std::to_string(i) + url);
    const std::string key = kbv::sha256_hex(std::to_string(i) + url + std::to_string(::getpid()));
    t = Clock::now();
    if (std::string why = kbv::publish_build(*q, key, copy); !why.empty()) {
      std::fprintf(stderr, "%s\n", why.c_str());
      return 1;
    }
    publish.push_back(ms_since(t));
    t = Clock::now();
    if (!kbv::fetch_build(*q, key, out / "dst" / std::to_string(i), error)) {
      std::fprintf(stderr, "fetch: %s\n", error.c_str());
      return 1;
    }
    fetch.push_back(ms_since(t));
  }
  fs::remove_all(out);
  std::printf("entry %s: %zu bytes packed; median of %d rounds: pack %.1f ms, publish (pack + put_blob + put_build) "
              "%.1f ms, fetch (get_build + get_blob + unpack) %.1f ms\n",
              entry.string().c_str(), bytes, rounds, median(pack), median(publish), median(fetch));
  return 0;
}
