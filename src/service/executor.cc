#include "service/executor.h"

#include <fmt/format.h>

#include "record/record.h"
#include "service/options.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/interrupt.h"

namespace kbv::service {
namespace fs = std::filesystem;

namespace {

// A problem name from the queue is data from a client: only plain relative names become paths.
bool plain_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name.front() == '/') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/')) return false;
  for (const auto& part : fs::path(name)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

// "level1/19_ReLU" -> level 1, id 19 (as kbv eval reads them from the problem's path).
void identify(const fs::path& problem, Pair& pair) {
  if (auto id = parse_problem_id(problem.filename().string())) pair.problem_id = *id;
  std::string parent = problem.parent_path().filename().string();
  if (parent.rfind("level", 0) == 0 && parent.size() > 5 && parent.size() < 9 &&
      parent.find_first_not_of("0123456789", 5) == std::string::npos)
    pair.level = std::stoi(parent.substr(5));
}

}  // namespace

JobFiles write_job_files(const queue::Job& job, const fs::path& scratch) {
  JobFiles out;
  const queue::JobSpec& s = job.spec;
  std::string name = plain_name(s.problem_name) ? s.problem_name : "problem";
  out.problem = scratch / "problems" / sha256_hex(s.problem_source) / (name + ".py");
  std::error_code ec;
  if (!fs::exists(out.problem, ec)) {
    fs::create_directories(out.problem.parent_path(), ec);
    if (std::string e = write_file_atomic(out.problem, s.problem_source); !e.empty()) {
      out.error = e;
      return out;
    }
  }
  bool markdown = solution_is_markdown(s.solution_source);
  fs::path dir = scratch / "jobs" / (plain_name(job.id) ? job.id : sha256_hex(job.id));
  fs::create_directories(dir, ec);
  out.solution = dir / (markdown ? "solution.md" : "solution.py");
  if (std::string e = write_file_atomic(out.solution, s.solution_source); !e.empty()) out.error = e;
  return out;
}

Execution Executor::run(const queue::Job& job) {
  Execution out;
  JobFiles files = write_job_files(job, scratch_);
  if (!files.error.empty()) {
    out.error = "writing the job's files: " + files.error;
    out.retry = true;
    return out;
  }
  EvalOptions o = base_;
  if (std::string e = apply_options(job.spec.options, o); !e.empty()) {
    out.error = e;  // the same options will not parse on another attempt either
    return out;
  }
  std::string device = o.device.empty() ? "auto" : o.device;
  auto env = environments_.find(device);
  if (env == environments_.end()) {
    std::string error;
    std::unique_ptr<WorkerProcess> idle;
    std::optional<Environment> probed = probe_environment(o, error, &idle);
    if (!probed) {
      out.error = "starting a worker: " + error;
      out.retry = true;
      return out;
    }
    reference_.adopt(std::move(idle));
    env = environments_.emplace(device, *probed).first;
  }
  o.device = env->second.device;
  Pair pair;
  pair.problem_path = files.problem;
  pair.solution_path = files.solution;
  identify(files.problem, pair);
  Record record = evaluate_pair(pair, o, env->second, reference_);
  std::error_code ec;
  fs::remove_all(files.solution.parent_path(), ec);
  if (interrupted()) {
    out.error = "the server stopped during the evaluation";
    out.retry = true;
    return out;
  }
  out.ok = true;
  out.record = to_json(record);
  return out;
}

}  // namespace kbv::service
