#include "supervisor/build_stage.h"

#include <cstdlib>
#include <map>

#include "util/clock.h"
#include "util/interrupt.h"
#include "util/pause.h"

namespace kbv {

BuildJob build_job_of(const SolutionSource& solution, const std::filesystem::path& solution_path,
                      const EvalOptions& options, const Environment& env) {
  BuildJob job;
  job.code = solution.code;
  job.first_line = solution.first_line;
  job.solution_path = solution_path;
  job.cache_dir = options.cache_dir;
  job.fast = options.fast_build;
  // What the build worker's environment says (kbv's own, then --python's extra variables).
  auto seen = [&](const char* name) {
    if (auto it = options.worker.env.find(name); it != options.worker.env.end()) return it->second;
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  job.toolchain = {env.torch_version, env.python_version, options.worker.python, env.device, env.device_name,
                   seen("CXX"), seen("TORCH_CUDA_ARCH_LIST")};
  // Sandboxed workers see the build folder on /tmp/kbv-ext (WorkerProcess::start), others where it lies.
  job.toolchain.in_place = options.worker.sandbox == sandbox::Mode::off;
  return job;
}

BuildResult build_candidate(const SolutionSource& solution, const std::filesystem::path& solution_path,
                            const EvalOptions& options, const Environment& env) {
  const BuildJob job = build_job_of(solution, solution_path, options, env);
  auto run_worker = [&](const BuildLaunch& launch) {
    BuildWorkerOutcome out;
    std::map<std::string, std::string> env_vars = launch.env;
    if (options.gpu) env_vars["CUDA_VISIBLE_DEVICES"] = std::to_string(*options.gpu);
    WorkerTarget target{solution_path, nullptr, launch.read};
    target.threads = worker_threads(options, env.device);  // the evaluation's zygote; kbv's own CPUs
    auto w = WorkerProcess::start("build", options.worker, env_vars, out.start_error, target);
    if (!w) {
      if (out.start_error.empty()) out.start_error = "unknown error";
      return out;
    }
    // Built ahead of its evaluation (compile/queue.h): stopped while another evaluation of this
    // kbv times on the CPU (util/pause.h); declared after `w`, so continued before it is stopped.
    const PausableProcess pause(w->pid(), w->pid_namespace());
    Reply r = w->call(msg::to_json(launch.request), ms(options.timeouts.build_s));
    if (!reply_as<msg::BuildReply>(r)) out.failure = worker_failure(r);
    return out;
  };
  return build_cached(job, run_worker);
}

std::unique_ptr<BuildQueue> queue_builds(std::vector<BuildItem> items, const Environment& env, int jobs) {
  auto shared = std::make_shared<std::vector<BuildItem>>(std::move(items));
  auto build = [shared, env](size_t i) {
    const BuildItem& item = (*shared)[i];
    BuildResult br;
    if (interrupted()) {
      br.kind = "interrupted";
    } else if (!item.solution.ok) {
      br.kind = "compile_error";
      br.message = item.solution.error;
    } else if (item.rejected ? *item.rejected
                             : lint_candidate(item.solution, item.path, item.options.protocol.policy,
                                              item.options.protocol.precision)
                                   .rejected()) {
      br.kind = "rejected";  // evaluate_pair rejects it before using the build: never compiled
      br.message = "rejected by the static analysis";
    } else {
      br = build_candidate(item.solution, item.path, item.options, env);
    }
    return br;
  };
  return std::make_unique<BuildQueue>(shared->size(), build, jobs);
}

}  // namespace kbv
