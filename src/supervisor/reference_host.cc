// What a result depends on besides the code (the environment a reference worker reports), and
// the reference worker kept loaded with one problem for consecutive samples (ReferenceHost).
#include <fmt/format.h>

#include "supervisor/pair_parts.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/sched.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

std::map<std::string, std::string> device_env(const EvalOptions& options) {
  std::map<std::string, std::string> env;
  if (options.gpu) env["CUDA_VISIBLE_DEVICES"] = std::to_string(*options.gpu);
  return env;
}

json Environment::to_json() const {
  return json{{"torch_version", torch_version},
              {"python_version", python_version},
              {"device", device},
              {"device_name", device_name}};
}

int worker_threads(const EvalOptions& options, const std::string& device) {
  if (!options.cpu.cpus.empty()) return options.cpu.threads;
  if (device.empty() || device == "cuda") return 0;
  return resolve_cpu_budget(options).threads;  // 0 with timing off
}

std::optional<Environment> probe_environment(const EvalOptions& options, std::string& error,
                                             std::unique_ptr<WorkerProcess>* keep) {
  // Started as the evaluation's other workers will be, when the device is known: it serves as
  // their reference, and their zygote is the same (supervisor/zygote.h).
  WorkerTarget target;
  target.threads = worker_threads(options, options.device);
  auto w = WorkerProcess::start("reference", options.worker, device_env(options), error, target);
  if (!w) return std::nullopt;
  Reply r = w->call(msg::to_json(msg::HelloRequest{}), ms(options.timeouts.load_s));
  std::optional<msg::HelloReply> hello = reply_as<msg::HelloReply>(r);
  if (!hello) {
    error = "cannot start a worker with " + options.worker.python + ": " +
            (r.detail.empty() ? r.body.dump() : r.detail);
    return std::nullopt;
  }
  Environment env;
  env.torch_version = hello->torch_version;
  env.python_version = hello->python_version;
  env.cuda_available = hello->cuda_available;
  env.device_count = hello->device_count.value_or(0);
  env.device = options.device.empty() ? (env.cuda_available ? "cuda" : "cpu") : options.device;
  if (env.device == "cuda" && !env.cuda_available) {
    error = "--device cuda, but torch sees no GPU on this machine (torch " + env.torch_version + ")";
    return std::nullopt;
  }
  if (env.device == "cuda" && !hello->cuda_built) {
    error = "--device cuda, but this kbv worker was built without CUDA support";
    return std::nullopt;
  }
  env.device_name = env.device == "cuda" ? hello->device_name : "cpu";
  if (keep) *keep = std::move(w);
  return env;
}

ReferenceHost::~ReferenceHost() { reset(); }

void ReferenceHost::reset() {
  warm_.clear();
  worker_.reset();
  problem_key_.clear();
}

void ReferenceHost::adopt(std::unique_ptr<WorkerProcess> idle) {
  warm_.clear();
  worker_ = std::move(idle);
  problem_key_.clear();
}

CpuBudget resolve_cpu_budget(const EvalOptions& options) {
  return options.protocol.timing.enabled ? cpu_budget(options.protocol.timing.cpu_threads) : CpuBudget{};
}

WorkerProcess* ReferenceHost::get(const fs::path& problem, const EvalOptions& options, msg::LoadProblemReply& load_reply,
                                  FailureKind& failure, const FileText* given) {
  FileText text = given ? *given : read_file(problem);
  if (!text.ok) {
    failure = {"problem_error", text.error};
    return nullptr;
  }
  std::string key = sha256_hex_parts({python_path(problem), text.text, options.device, options.protocol.precision,
                                      options.protocol.reference_precision, options.cpu_sizes,
                                      options.protocol.cast_init_inputs ? "cast-init" : "",
                                      options.meta_model ? "meta-model" : "",
                                      "threads " + std::to_string(options.cpu.threads)});
  if (worker_ && worker_->alive() && key == problem_key_) {
    load_reply = load_reply_;
    return worker_.get();
  }
  // An adopted idle worker (no problem loaded yet) is used as is; otherwise a fresh one.
  if (!(worker_ && worker_->alive() && problem_key_.empty())) reset();
  std::string error;
  if (!worker_) {
    // With the thread budget from its start, as its candidate (thread parity); on kbv's CPUs until
    // a pair pins it to its own (commands that load problems on several hosts at once leave it there).
    WorkerTarget target;
    target.threads = worker_threads(options, options.device);
    worker_ = WorkerProcess::start("reference", options.worker, device_env(options), error, target);
  }
  if (!worker_) {
    failure = {"harness_error", "cannot start the reference worker: " + error};
    return nullptr;
  }
  msg::LoadRequest load;
  load.path = python_path(problem);
  load.code = text.text;
  load.device = options.device;
  load.cpu_threads = options.cpu.threads;  // the evaluation's budget (0: none, as they are)
  load.precision = options.protocol.precision;
  load.reference_precision = options.protocol.reference_precision;
  load.seed = options.protocol.construction_seed;
  load.cpu_sizes = options.cpu_sizes;
  load.cast_init_inputs = options.protocol.cast_init_inputs;
  load.meta_model = options.meta_model;
  Reply r = worker_->call(msg::to_json(load), ms(options.timeouts.load_s));
  std::optional<msg::LoadProblemReply> loaded = reply_as<msg::LoadProblemReply>(r);
  if (!loaded) {
    failure = classify(worker_failure(r), "problem_error");
    std::string kind = failure.kind;
    if (kind != "interrupted") failure.kind = "problem_error";
    if (kind == "timeout" || kind == "crashed")
      failure.message = fmt::format("{}: loading the problem: {}", problem.string(), r.detail);
    reset();
    return nullptr;
  }
  problem_key_ = key;
  load_reply_ = *loaded;
  load_reply = *loaded;
  return worker_.get();
}

}  // namespace kbv
