#include "service/pool.h"

#include <algorithm>

#include <fmt/format.h>

#include "queue/worker_loop.h"
#include "service/options.h"
#include "supervisor/queue_job.h"
#include "util/interrupt.h"

namespace kbv::service {

WorkerPool::WorkerPool(queue::Queue& queue, PoolConfig config, Metrics& metrics, std::function<void()> finished,
                       Notify notify)
    : queue_(queue), config_(std::move(config)), metrics_(metrics), finished_(std::move(finished)),
      notify_(std::move(notify)) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start() {
  for (int i = 0; i < config_.evaluators(); ++i) threads_.emplace_back([this, i] { loop(i, false); });
  for (int i = 0; i < config_.builders; ++i) threads_.emplace_back([this, i] { loop(i, true); });
}

void WorkerPool::stop() {
  stopping_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void WorkerPool::loop(int index, bool builder) {
  EvalOptions base = config_.base;
  std::string name = fmt::format("{}:serve{}{}", queue::default_worker_name(), builder ? "-build" : "", index);
  if (!builder && !config_.gpus.empty()) {
    base.gpu = config_.gpus[index];
    name += fmt::format(":gpu{}", *base.gpu);
  }
  QueueJobContext context;
  context.options_of = [&base](const nlohmann::json& options, std::string& error) -> std::optional<EvalOptions> {
    EvalOptions o = base;
    error = apply_options(options, o);
    if (!error.empty()) return std::nullopt;
    return o;
  };
  context.scratch_dir = config_.scratch;
  context.problems_dirs = config_.problems;
  context.gpu = base.gpu;
  // Builds that `kbv worker --role build` hosts put in the queue are fetched rather than compiled
  // again (role all: a job without one is compiled here, as kbv eval does).
  context.queue = &queue_;
  context.notify = notify_;
  if (builder) {
    context.role = "build";
    // This process's evaluating workers share the cache the build is in; without them (--workers
    // 0) the builds go to the queue's storage for kbv workers elsewhere.
    context.publish = config_.evaluators() == 0;
  }
  QueueJobRunner runner(std::move(context));
  // Evaluating workers behind builders find the builds in the cache: the builders count them.
  const bool count_cached_build = builder || config_.builders == 0;
  auto execute = [&](const queue::Job& job) -> queue::ExecResult {
    const HandoffStats before = runner.handoff();
    queue::ExecResult r = runner.run(job);
    // A builder completes the jobs that end at their build (a compile error, a lint rejection)
    // with their record, like an evaluation.
    if (r.kind == queue::ExecResult::Kind::done) metrics_.evaluation_finished(r.record, unix_now(), count_cached_build);
    else if (r.kind != queue::ExecResult::Kind::interrupted && r.kind != queue::ExecResult::Kind::built)
      metrics_.job_failed();
    const HandoffStats& after = runner.handoff();
    if (after.ahead_compiled > before.ahead_compiled || after.ahead_cached > before.ahead_cached)
      metrics_.build_made(after.ahead_cached > before.ahead_cached, after.ahead_seconds - before.ahead_seconds);
    return r;
  };
  queue::LoopOptions o;
  o.worker = name;
  o.lease_seconds = config_.lease_s;
  o.heartbeat_seconds = std::min(10.0, config_.lease_s / 3);
  o.idle_seconds = config_.idle_s;
  o.stop = [this] { return stopping_.load() || interrupted(); };
  // With builders, the evaluating workers take only jobs whose build stage is over.
  if (config_.builders > 0) o.stage = builder ? queue::kStageBuild : queue::kStageEval;
  // Every event of the loop wakes the long-polls: "job X: done" comes after the record is stored.
  Notify notify = [this](const Notice& n) {
    if (notify_) notify_(n);
    finished_();
  };
  queue::run_worker_loop(queue_, execute, o, notify);
}

}  // namespace kbv::service
