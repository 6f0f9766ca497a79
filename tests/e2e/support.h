// What the end-to-end tests share: running the kbv binary built beside them, reading the JSON it
// wrote, scratch folders, and whether a GPU is there (GPU tests skip visibly without one).
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

namespace kbv::e2e {

namespace fs = std::filesystem;

inline const fs::path kSource = KBV_SOURCE_DIR;

// A problem's source with its own Model as the candidate (`class ModelNew(Model): pass`): a solution
// with nothing to build, for tests whose subject is not the candidate's code (run it under
// --policy lenient). "" when the problem is unreadable.
inline std::string model_as_candidate(const fs::path& problem) {
  const std::string source = kbv::read_file(problem).text;
  return source.empty() ? "" : source + "\n\nclass ModelNew(Model):\n    pass\n";
}

// An example's source with its load_inline extension name `from` changed to `to`: a source of the
// test's own, whose build no other evaluation shares and whose cache entry holds a folder named
// `to`. "" when the example does not name `from`.
inline std::string renamed_example(const fs::path& example, const std::string& from, const std::string& to) {
  std::string source = kbv::read_file(example).text;
  const std::string old_name = "name=\"" + from + "\"";
  const size_t at = source.find(old_name);
  if (at == std::string::npos) return "";
  return source.replace(at, old_name.size(), "name=\"" + to + "\"");
}

struct Outcome {
  int code = -1;        // exit status; -1 when it did not exit (killed, timed out, did not start)
  std::string output;   // stdout, then stderr
  nlohmann::json record;  // the JSON file named by `json_path`, parsed; null when absent or unreadable
};

// `kbv ARGS...` (the binary of this build), with KBV_CACHE_DIR set to `cache` unless that is empty.
inline Outcome run_kbv(const std::vector<std::string>& args, const fs::path& json_path = {}, int timeout_s = 1500,
                       const std::string& cache = KBV_TEST_CACHE) {
  std::vector<std::string> argv = {KBV_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> env;
  if (!cache.empty()) env["KBV_CACHE_DIR"] = cache;
  kbv::RunResult r = kbv::run_command(argv, env, std::chrono::seconds(timeout_s));
  Outcome o;
  o.code = r.status.exited ? r.status.code : -1;
  o.output = r.output + r.error;
  if (!json_path.empty()) {
    kbv::FileText t = kbv::read_file(json_path);
    if (t.ok) o.record = nlohmann::json::parse(t.text, nullptr, false);
  }
  return o;
}

// The scratch folders of this test process, removed when it exits with every test passed (a
// failed test's records and worker logs stay for a look; KBV_E2E_KEEP=1 keeps them all, as the GPU
// check does to bring them back). Without this a full ctest left ~1,100 folders, tens of GB, in TMP.
struct ScratchFolders {
  std::set<fs::path> roots;
  ~ScratchFolders() {
    if (std::getenv("KBV_E2E_KEEP") != nullptr) return;
    if (testing::UnitTest::GetInstance()->failed_test_count() > 0) return;
    std::error_code ec;
    for (const fs::path& r : roots) fs::remove_all(r, ec);
  }
};
inline ScratchFolders& scratch_folders() {
  static ScratchFolders folders;
  return folders;
}

// An empty folder TMP/kbv-e2e-<suite>-<pid>/<name>: a test process's own, emptied first.
inline fs::path scratch_dir(const std::string& suite, const std::string& name) {
  fs::path root = fs::temp_directory_path() / ("kbv-e2e-" + suite + "-" + std::to_string(::getpid()));
  scratch_folders().roots.insert(root);
  fs::path d = root / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

inline bool gpu_visible() { return fs::exists("/dev/nvidia0") || fs::exists("/dev/nvidiactl"); }

}  // namespace kbv::e2e
