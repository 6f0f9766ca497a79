// The compile step: a candidate's build in its own process, into a content-addressed cache whose
// key covers everything that changes the binary; its outcome (not its message) is cached.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compile/pch.h"
#include "proto/messages.h"
#include "record/decide.h"

namespace kbv {

struct BuildResult {
  bool ok = false;
  std::string kind;          // compile_error | needs_cuda | missing_model_new | timeout | crashed
                             // | harness_error (the build worker could not start)
  std::string message;
  nlohmann::json diagnostics = nlohmann::json::array();
  std::filesystem::path extensions_dir;  // TORCH_EXTENSIONS_DIR of this candidate
  double seconds = 0;  // wall time of the whole step, cache look-up, waiting and learning included
  bool cached = false;
  // What the candidate's loads of this build must see as the build saw it: environment (CXX of the
  // fast build, else torch's up-to-date check sees another command and rebuilds) and folders to
  // read (the precompiled headers and the compiler wrapper).
  std::map<std::string, std::string> env;
  std::vector<std::filesystem::path> read;
  std::string fast;  // "on", or why the fast build was not used ("off", or the failure)
};

// What the binary depends on besides the candidate's code.
struct Toolchain {
  std::string torch_version;
  std::string python_version;
  std::string python;        // the interpreter the workers run
  std::string device;        // "cpu" | "cuda"
  std::string device_name;   // the GPU model (its architecture) or "cpu"
  std::string cxx;           // CXX as the build worker sees it ("" : c++)
  std::string cuda_arch_list;  // TORCH_CUDA_ARCH_LIST as the build worker sees it
  // The workers see the build folder where it lies (--sandbox off), not bound on /tmp/kbv-ext.
  // torch's build.ninja names the folder, so a build made at one path is compiled again when it is
  // loaded at the other: the two are cached apart.
  bool in_place = false;
};

// The cache entry's name: sha256 of the code (sources and load_inline's flags are in it), the
// toolchain (where the workers see the build included) and how it is compiled (`mode`: "plain",
// or the fast build's id, which names the real compiler and its version).
std::string build_key(const std::string& code, const Toolchain& toolchain, const std::string& mode);

// One build as the compile step asks for it.
struct BuildJob {
  std::string code;                       // the solution's Python source
  int first_line = 1;                     // its first line in the solution file (a Markdown answer's block)
  std::filesystem::path solution_path;    // the file being evaluated (messages name it)
  std::filesystem::path cache_dir;        // cache_dir/build/<key>
  Toolchain toolchain;
  bool fast = true;                       // precompiled headers and lld (compile/pch.h)
};

// What running the build worker gave: it could not start (`start_error`), it built (`failure`
// empty), or how it failed.
struct BuildLaunch {
  std::map<std::string, std::string> env;
  std::vector<std::filesystem::path> read;  // besides the solution
  msg::BuildRequest request;
};
struct BuildWorkerOutcome {
  std::string start_error;
  std::optional<WorkerFailure> failure;
};
// Runs the build worker (supervisor side: a sandboxed process) with these environment variables
// and request.
using RunBuildWorker = std::function<BuildWorkerOutcome(const BuildLaunch& launch)>;

// Where a build of `job` lives: cache_dir/build/<key>, the key as build_key computes it with the
// fast build that would be used (prepared here if needed: kbv's own trusted step, no candidate code).
// build_cached builds there; kbv worker --role eval looks the same key up in the queue.
struct BuildEntry {
  std::filesystem::path dir;           // cache_dir/build/<key>: ext/ and result.json
  std::string key;
  std::optional<FastBuild> fast;
  std::string fast_state;              // BuildResult::fast
};
BuildEntry build_entry(const BuildJob& job);

// Builds the candidate into cache_dir/build/<key>/ext, or reuses an earlier outcome.
BuildResult build_cached(const BuildJob& job, const RunBuildWorker& run_worker);

// The absolute path a Python worker is given for a file.
std::string python_path(const std::filesystem::path& p);

}  // namespace kbv
