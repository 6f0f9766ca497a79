// The compile step: a candidate's build in its own process, into a content-addressed cache whose
// key covers everything that changes the binary.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "record/decide.h"

namespace kbv {

struct BuildResult {
  bool ok = false;
  std::string kind;          // compile_error | needs_cuda | missing_model_new | timeout | crashed
  std::string message;
  nlohmann::json diagnostics = nlohmann::json::array();
  std::filesystem::path extensions_dir;  // TORCH_EXTENSIONS_DIR of this candidate
  double seconds = 0;
  bool cached = false;
};

// What the binary depends on besides the candidate's code.
struct Toolchain {
  std::string torch_version;
  std::string python_version;
  std::string python;        // the interpreter the workers run
  std::string device;        // "cpu" | "cuda"
};

// The cache entry's name: sha256 of the code and the toolchain.
std::string build_key(const std::string& code, const Toolchain& toolchain);

// One build as the compile step asks for it.
struct BuildJob {
  std::string code;                       // the solution's Python source
  int first_line = 1;                     // its first line in the solution file (a Markdown answer's block)
  std::filesystem::path solution_path;    // the file being evaluated (messages name it)
  std::filesystem::path cache_dir;        // cache_dir/build/<key>
  Toolchain toolchain;
};

// What running the build worker gave: it could not start (`start_error`), it built (`failure`
// empty), or how it failed.
struct BuildWorkerOutcome {
  std::string start_error;
  std::optional<WorkerFailure> failure;
};
// Runs the build worker (supervisor side: a sandboxed process) with these environment variables
// and request.
using RunBuildWorker =
    std::function<BuildWorkerOutcome(const std::map<std::string, std::string>& env, const msg::BuildRequest& request)>;

// Builds the candidate into cache_dir/build/<key>/ext, or reuses an earlier outcome.
BuildResult build_cached(const BuildJob& job, const RunBuildWorker& run_worker);

// The absolute path a Python worker is given for a file.
std::string python_path(const std::filesystem::path& p);

}  // namespace kbv
