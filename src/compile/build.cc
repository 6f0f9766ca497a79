#include "compile/build.h"

#include <chrono>

#include <fmt/format.h>

#include "compile/diagnostics.h"
#include "compile/pch.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The host path of a file the build worker's compiler named: the sandbox binds the build folder
// on /tmp/kbv-ext, unsandboxed builds use the folder itself.
fs::path host_build_file(const std::string& printed, const fs::path& extensions_dir) {
  const std::string bound = "/tmp/kbv-ext/";
  if (printed.rfind(bound, 0) == 0) return extensions_dir / printed.substr(bound.size());
  return printed;
}

// One compiler error as a user can act on it: at the line of the solution file that holds the
// C++/CUDA string when it is found there verbatim, else at the generated file in the build cache.
std::string compile_error_line(const json& d, const std::string& solution, const fs::path& extensions_dir) {
  const std::string file = d.value("file", "");
  const int line = d.value("line", 0);
  const std::string msg = d.value("severity", "error") + ": " + d.value("message", "");
  const std::string generated = fs::path(file).filename().string() + (line > 0 ? fmt::format(":{}", line) : "");
  if (const int at = d.value("solution_line", 0); at > 0)
    return fmt::format("{}:{}: {} ({} of the generated source)", solution, at, msg, generated);
  if (file.empty()) return fmt::format("{}: {}", solution, msg);
  return fmt::format("{}: {} (at {}, in the build cache: {})", solution, msg, generated,
                     host_build_file(file, extensions_dir).string());
}

// Adds `solution_line` to a diagnostic whose generated file (main.cpp, cuda.cu) is still in the
// build cache and whose line is found verbatim in the solution's code.
void map_to_solution(json& d, const BuildJob& job, const fs::path& extensions_dir) {
  const int line = d.value("line", 0);
  if (line <= 0 || d.contains("solution_line")) return;
  FileText generated = read_file(host_build_file(d.value("file", ""), extensions_dir));
  if (!generated.ok) return;
  if (auto at = source_line_of(generated.text, job.code, line)) d["solution_line"] = *at + job.first_line - 1;
}

// "<solution>:<line>: error: <first error> (...)", then one line per further error.
std::string compile_error_message(const json& diagnostics, const std::string& solution,
                                  const fs::path& extensions_dir) {
  std::string out;
  for (const auto& d : diagnostics) {
    if (!out.empty()) out += "\n";
    out += compile_error_line(d, solution, extensions_dir);
  }
  return out;
}

}  // namespace

std::string python_path(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return ec ? p.string() : a.string();
}

std::string build_key(const std::string& code, const Toolchain& t, const std::string& mode) {
  // With TORCH_CUDA_ARCH_LIST set, nvcc compiles for the listed architectures whatever GPU the
  // host has (or none: a CPU-only build host, kbv worker --role build), so the GPU's name does
  // not enter the key; without it torch compiles for the visible GPU, whose name does.
  const std::string gpu = t.device == "cuda" && !t.cuda_arch_list.empty() ? "(TORCH_CUDA_ARCH_LIST)" : t.device_name;
  std::vector<std::string> parts = {"kbv-build-2", KBV_VERSION, code, t.torch_version, t.python_version, t.python,
                                    t.device, gpu, t.cxx, t.cuda_arch_list, mode};
  // Only an in-place build adds a part, so the keys of builds made at /tmp/kbv-ext (every sandboxed
  // one) stay what they were and the caches already made keep serving them.
  if (t.in_place) parts.push_back("in place");
  return sha256_hex_parts(parts);
}

namespace {

// A cached outcome must not name the file of the evaluation that made it (issue: "cache the
// outcome, not the message"): the solution's path, as given and absolute, is kept as a marker and
// put back for the file being evaluated.
const char* kRelMark = "\x1fsolution\x1f";
const char* kAbsMark = "\x1fsolution-abs\x1f";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

std::string unname(const std::string& message, const fs::path& solution) {
  return replace_all(replace_all(message, python_path(solution), kAbsMark), solution.string(), kRelMark);
}

std::string rename_for(const std::string& message, const fs::path& solution) {
  return replace_all(replace_all(message, kAbsMark, python_path(solution)), kRelMark, solution.string());
}

}  // namespace

BuildEntry build_entry(const BuildJob& job) {
  BuildEntry e;
  e.fast_state = "off";
  if (job.fast) {
    std::string error;
    const Toolchain& t = job.toolchain;
    FastBuild fb = prepare_fast_build(job.cache_dir, t.python, t.cxx, t.torch_version, t.device, error);
    if (error.empty()) {
      e.fast = fb;
      e.fast_state = "on";
    } else {
      e.fast_state = "unavailable: " + error;
    }
  }
  e.key = build_key(job.code, job.toolchain, e.fast ? e.fast->id : "plain");
  e.dir = job.cache_dir / "build" / e.key;
  return e;
}

BuildResult build_cached(const BuildJob& job, const RunBuildWorker& run_worker) {
  BuildResult b;
  auto t0 = Clock::now();
  const BuildEntry entry = build_entry(job);
  const std::optional<FastBuild>& fast = entry.fast;
  b.fast = entry.fast_state;
  const fs::path& dir = entry.dir;
  if (fast) {
    b.env["CXX"] = fast->wrapper.string();
    b.read.push_back(fast->root);
  }
  b.extensions_dir = dir / "ext";
  fs::path marker = dir / "result.json";
  // A finished build's outcome, kept in result.json.
  auto cached = [&]() {
    FileText t = read_file(marker);
    json j = t.ok ? json::parse(t.text, nullptr, false) : json();
    // Never a kind that takes the sample out of judgement (an entry a forged reply wrote before kbv
    // refused such replies): built again.
    if (!j.is_object() || decided_by_kbv_only(j.value("kind", ""))) return false;
    b.ok = j.value("ok", false);
    b.kind = j.value("kind", "");
    b.message = rename_for(j.value("message", ""), job.solution_path);
    b.diagnostics = j.value("diagnostics", json::array());
    // The outcome is the code's; the message names the file being evaluated now, not the one
    // that was built first (another run's copy of the same code).
    if (b.kind == "compile_error" && !b.diagnostics.empty()) {
      for (auto& d : b.diagnostics) map_to_solution(d, job, b.extensions_dir);  // entries cached before the mapping
      b.message = compile_error_message(b.diagnostics, job.solution_path.string(), b.extensions_dir);
    }
    b.cached = true;
    b.seconds = since(t0);
    if (j.value("plain_fallback", false)) b.env.erase("CXX");  // built the plain way (below)
    return true;
  };
  if (cached()) return b;
  std::error_code ec;
  fs::create_directories(b.extensions_dir, ec);
  // One kbv builder or loader of this folder at a time; under that lock a torch `lock` file is
  // stale (a build killed midway) and would make this build wait on it forever.
  FileLock lock(dir / ".kbv-lock");
  if (lock.ok()) {
    if (cached()) return b;  // built meanwhile by another kbv process
    remove_stale_torch_locks(b.extensions_dir);
  }
  BuildLaunch launch;
  launch.env = b.env;
  launch.env["TORCH_EXTENSIONS_DIR"] = b.extensions_dir.string();
  launch.read = b.read;
  launch.request.path = python_path(job.solution_path);
  launch.request.code = job.code;
  launch.request.device = job.toolchain.device;
  BuildWorkerOutcome ran = run_worker(launch);
  if (fast && ran.start_error.empty() && ran.failure && ran.failure->traceback &&
      names_precompiled_header(*ran.failure->traceback, fast->root)) {
    // The failure names a precompiled header (one GCC refused to read): kbv's fault, not the
    // candidate's. Built again the plain way, in the same entry. (A candidate can name it in its
    // own error too: it gets a second, plain build of the same code, nothing else:
    // examples/level1/19_ReLU/cpu_pch_fallback.py.)
    launch.env.erase("CXX");
    fs::remove_all(b.extensions_dir, ec);
    fs::create_directories(b.extensions_dir, ec);
    ran = run_worker(launch);
    b.env.erase("CXX");
    b.fast = "fell back to plain: the precompiled header failed";
  }
  // The flag sets this build compiled without a precompiled header get one, for the next builds.
  if (fast) {
    std::string ignored;  // a flag set kbv will not precompile is compiled as usual: no error
    learn_pch(*fast, b.extensions_dir, ignored);
  }
  b.seconds = since(t0);
  if (!ran.start_error.empty()) {
    b.kind = "harness_error";  // the host's failure, not the candidate's: never cached nor stored
    b.message = "cannot start the build worker: " + ran.start_error;
    return b;
  }
  const std::optional<WorkerFailure>& failure = ran.failure;
  if (!failure) {
    b.ok = true;
  } else {
    const WorkerFailure& wf = *failure;
    FailureKind f = classify(wf, "compile_error");
    b.kind = f.kind;
    b.message = f.message;
    const bool traceback = wf.status == WorkerFailure::Status::failed && wf.traceback;
    std::string log = (traceback ? *wf.traceback : "") + "\n" + b.message;
    auto diags = parse_compiler_errors(log);
    for (const auto& d : diags) {
      json dj = {{"file", d.file}, {"line", d.line}, {"column", d.column}, {"severity", d.severity},
                 {"message", d.message}};
      map_to_solution(dj, job, b.extensions_dir);  // the line of the .py that holds this line
      b.diagnostics.push_back(std::move(dj));
    }
    if (!diags.empty() && b.kind == "compile_error")
      b.message = compile_error_message(b.diagnostics, job.solution_path.string(), b.extensions_dir);
    else if (b.kind == "compile_error" && traceback) {
      PythonError pe = parse_python_traceback(*wf.traceback, python_path(job.solution_path));
      if (pe.line > 0)
        b.message = fmt::format("{}:{}: {}", pe.file, pe.line, pe.exception.empty() ? b.message : pe.exception);
    }
  }
  // Deterministic outcomes are cached; a timeout or a crash may be the machine's fault.
  if (b.kind != "timeout" && b.kind != "crashed" && !decided_by_kbv_only(b.kind)) {
    json j = {{"ok", b.ok}, {"kind", b.kind}, {"message", unname(b.message, job.solution_path)},
              {"diagnostics", b.diagnostics}};
    if (b.fast.rfind("fell back", 0) == 0) j["plain_fallback"] = true;
    write_file_atomic(marker, j.dump(2));
  }
  return b;
}

}  // namespace kbv
