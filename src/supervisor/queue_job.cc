// A queued job evaluated by the library core (queue_job.h).
#include "supervisor/queue_job.h"

#include <system_error>

#include <fmt/format.h>

#include "problem/problem.h"
#include "supervisor/build_handoff.h"
#include "supervisor/build_stage.h"
#include "record/record.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/interrupt.h"

namespace kbv {

namespace fs = std::filesystem;

std::optional<fs::path> safe_problem_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name.front() == '/') return std::nullopt;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.' || c == '/';
    if (!ok) return std::nullopt;
  }
  fs::path path(name);
  for (const auto& part : path) {
    if (part == ".." || part == "." || part.empty()) return std::nullopt;
  }
  if (path.extension() != ".py") path += ".py";
  return path;
}

std::string solution_extension(const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    size_t first = text.find_first_not_of(" \t", at);
    if (first != std::string::npos && first < end && text.compare(first, 3, "```") == 0) return ".md";
    at = end + 1;
  }
  return ".py";
}

namespace {

// The compiled objects of a build entry (.so, .o) and their modification times: a rebuild moves them.
std::map<fs::path, fs::file_time_type> object_times(const fs::path& dir) {
  std::map<fs::path, fs::file_time_type> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const auto ext = it->path().extension();
    if (ext == ".so" || ext == ".o") out[it->path()] = it->last_write_time(ec);
  }
  return out;
}

// The host failed this worker, not the candidate (a worker process could not start): the job goes
// back to the queue for another attempt, up to its attempts, and no record is stored for it.
queue::ExecResult host_failed(const Record& record) {
  return {queue::ExecResult::Kind::retry, {}, "this worker cannot evaluate it: " + record.message};
}

}  // namespace

QueueJobRunner::QueueJobRunner(QueueJobContext context) : context_(std::move(context)) {}

queue::ExecResult QueueJobRunner::run(const queue::Job& job) {
  using Kind = queue::ExecResult::Kind;
  std::string error;
  std::optional<EvalOptions> options = context_.options_of(job.spec.options, error);
  if (!options) return {Kind::failed, {}, "options: " + error};
  if (context_.gpu) options->gpu = context_.gpu;

  // The problem: its source, or its name looked up in --problems.
  std::optional<fs::path> name = safe_problem_name(job.spec.problem_name);
  if (!job.spec.problem_name.empty() && !name) {
    return {Kind::failed, {}, fmt::format("problem name '{}' is not a plain relative name (letters, digits, _-./)",
                                          job.spec.problem_name)};
  }
  std::string problem_text = job.spec.problem_source;
  if (problem_text.empty()) {
    if (!name) return {Kind::failed, {}, "the job has neither a problem source nor a problem name"};
    for (const auto& dir : context_.problems_dirs) {
      FileText text = read_file(dir / *name);
      if (text.ok) {
        problem_text = text.text;
        break;
      }
    }
    if (problem_text.empty()) {
      return {Kind::failed, {}, fmt::format("problem '{}' is not in this worker's --problems ({} folder(s))",
                                            job.spec.problem_name, context_.problems_dirs.size())};
    }
  }
  // Content-addressed, keeping the level folder and the file name: the record's level and problem
  // id come from them, as with `kbv eval --problem level1/19_ReLU.py`.
  const fs::path problem_rel = name ? *name : fs::path("problem.py");
  const fs::path problem_path = context_.scratch_dir / "problems" / sha256_hex(problem_text).substr(0, 24) / problem_rel;
  const fs::path job_dir = context_.scratch_dir / "jobs" / job.id;
  const fs::path solution_path = job_dir / ("solution" + solution_extension(job.spec.solution_source));
  std::error_code ec;
  fs::create_directories(problem_path.parent_path(), ec);
  fs::create_directories(job_dir, ec);
  if (std::string why = write_file_atomic(problem_path, problem_text); !why.empty()) {
    return {Kind::retry, {}, "cannot write the problem into the scratch folder: " + why};
  }
  if (std::string why = write_file_atomic(solution_path, job.spec.solution_source); !why.empty()) {
    return {Kind::retry, {}, "cannot write the solution into the scratch folder: " + why};
  }
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{job_dir};

  // The environment, probed once per device asked for. A build worker compiles CUDA without a
  // GPU (nvcc for TORCH_CUDA_ARCH_LIST): it probes torch as for the CPU and builds for "cuda".
  const bool build_role = context_.role == "build";
  auto found = environments_.find(options->device);
  if (found == environments_.end()) {
    std::unique_ptr<WorkerProcess> idle;
    EvalOptions probe = *options;
    if (build_role && probe.device == "cuda") probe.device = "cpu";
    auto env = probe_environment(probe, error, &idle);
    if (!env) {
      if (interrupted()) return {Kind::interrupted, {}, ""};
      return {Kind::retry, {}, "this worker cannot start an evaluation: " + error};
    }
    if (build_role && options->device == "cuda") {
      env->device = "cuda";
      env->device_name = "";  // not known here: the build is for TORCH_CUDA_ARCH_LIST (compile/build.h build_key)
    }
    reference_.adopt(std::move(idle));
    found = environments_.emplace(options->device, *env).first;
  }
  const Environment& env = found->second;
  options->device = env.device;

  Pair pair;
  pair.problem_path = problem_path;
  pair.solution_path = solution_path;
  if (auto id = parse_problem_id(problem_path.filename().string())) pair.problem_id = *id;
  pair.sample_id = job.spec.sample_id.value_or(0);  // the run folder's, when kbv eval --run --queue sent it
  const std::string parent = problem_path.parent_path().filename().string();
  if (parent.rfind("level", 0) == 0 && parent.size() > 5 && parent.size() < 10 &&
      parent.find_first_not_of("0123456789", 5) == std::string::npos) {
    pair.level = std::stoi(parent.substr(5));
  }
  if (build_role) return build_stage(pair, *options, env);
  const fs::path fetched = context_.queue ? fetch_build_for(pair, *options, env) : fs::path();
  const auto before = fetched.empty() ? std::map<fs::path, fs::file_time_type>() : object_times(fetched);
  Record record = evaluate_pair(pair, *options, env, reference_);
  if (interrupted() || record.verdict == Verdict::interrupted) return {Kind::interrupted, {}, ""};
  if (!record.judges_candidate()) return host_failed(record);  // harness_error: never stored
  if (record.build && !record.build->cached) ++handoff_.compiled;
  if (!fetched.empty() && object_times(fetched) != before) {
    // torch's ninja saw other build commands than the build host's: the paths in them differ.
    ++handoff_.rebuilt;
    warn(context_.notify,
         fmt::format("job {}: the build from the queue was compiled again when the candidate loaded it: the "
                     "build host's paths differ from this host's (give every host the same --cache-dir / "
                     "KBV_CACHE_DIR, and the same --sandbox; docs/QUEUE.md)",
                     job.id));
  }
  return {Kind::done, to_json(record), ""};
}

fs::path QueueJobRunner::fetch_build_for(const Pair& pair, const EvalOptions& options, const Environment& env) {
  PreparedCandidate candidate = read_candidate(pair.solution_path);
  if (!candidate.solution.ok) return {};  // evaluate_pair says why
  const BuildEntry entry = build_entry(build_job_of(candidate.solution, pair.solution_path, options, env));
  std::error_code ec;
  if (fs::exists(entry.dir / "result.json", ec)) return {};  // in this host's cache already
  std::string error;
  if (fetch_build(*context_.queue, entry.key, entry.dir, error)) {
    ++handoff_.fetched;
    return entry.dir;
  }
  // No build of this key in the queue (a job no build worker took, or a build host whose toolchain
  // differs from this one's), or the queue failed: evaluate_pair compiles here, as kbv eval does.
  if (!error.empty()) warn(context_.notify, fmt::format("build {}: {}; compiling here", entry.key.substr(0, 12), error));
  return {};
}

queue::ExecResult QueueJobRunner::build_stage(const Pair& pair, const EvalOptions& options, const Environment& env) {
  using Kind = queue::ExecResult::Kind;
  if (!context_.queue) return {Kind::failed, {}, "a build stage needs the queue to put its build in"};
  PreparedCandidate prepared = prepare_candidate(pair.solution_path, options);
  // A candidate that does not read, is rejected by the static analysis or does not build ends
  // here, with the record kbv eval writes for it (evaluate_pair stops before the reference).
  auto record_of = [&](const BuildResult* built) -> queue::ExecResult {
    Record record = evaluate_pair(pair, options, env, reference_, built, &prepared);
    if (interrupted() || record.verdict == Verdict::interrupted) return {Kind::interrupted, {}, ""};
    if (!record.judges_candidate()) return host_failed(record);  // harness_error: never stored
    return {Kind::done, to_json(record), ""};
  };
  if (!prepared.solution.ok || prepared.lint.rejected()) return record_of(nullptr);
  const BuildJob job = build_job_of(prepared.solution, pair.solution_path, options, env);
  if (env.device == "cuda" && job.toolchain.cuda_arch_list.empty()) {
    // Without an architecture list torch compiles for the visible GPU: the GPU host builds it.
    ++handoff_.passed_on;
    return {Kind::built, {}, ""};
  }
  BuildResult built = build_candidate(prepared.solution, pair.solution_path, options, env);
  if (interrupted() || built.kind == "interrupted") return {Kind::interrupted, {}, ""};
  if (!built.ok && built.kind != "missing_model_new") return record_of(&built);
  ++(built.cached ? handoff_.ahead_cached : handoff_.ahead_compiled);
  handoff_.ahead_seconds += built.seconds;
  if (!context_.publish) return {Kind::built, {}, ""};  // this host's eval workers find it in the cache
  const fs::path dir = built.extensions_dir.parent_path();
  if (std::string why = publish_build(*context_.queue, dir.filename().string(), dir); !why.empty()) {
    return {Kind::retry, {}, "cannot put the build in the queue: " + why};
  }
  ++handoff_.published;
  return {Kind::built, {}, ""};
}

}  // namespace kbv
