// A queued job evaluated by the library core (queue_job.h).
#include "supervisor/queue_job.h"

#include <system_error>

#include <fmt/format.h>

#include "problem/problem.h"
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

  // The environment, probed once per device asked for.
  auto found = environments_.find(options->device);
  if (found == environments_.end()) {
    std::unique_ptr<WorkerProcess> idle;
    auto env = probe_environment(*options, error, &idle);
    if (!env) {
      if (interrupted()) return {Kind::interrupted, {}, ""};
      return {Kind::retry, {}, "this worker cannot start an evaluation: " + error};
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
  const std::string parent = problem_path.parent_path().filename().string();
  if (parent.rfind("level", 0) == 0 && parent.size() > 5 && parent.size() < 10 &&
      parent.find_first_not_of("0123456789", 5) == std::string::npos) {
    pair.level = std::stoi(parent.substr(5));
  }
  Record record = evaluate_pair(pair, *options, env, reference_);
  if (interrupted() || record.verdict == Verdict::interrupted) return {Kind::interrupted, {}, ""};
  return {Kind::done, to_json(record), ""};
}

}  // namespace kbv
