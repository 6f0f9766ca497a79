#include "supervisor/warm_pool.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "sandbox/sandbox.h"
#include "util/interrupt.h"

namespace kbv {

namespace fs = std::filesystem;

namespace {

// What a worker fixes when it starts: two takes with the same key may share a pre-started worker.
std::string key_of(const WorkerConfig& c, const WarmPool::Env& env, const WorkerTarget& t) {
  nlohmann::json read = nlohmann::json::array();
  for (const auto& r : t.read) read.push_back(r.string());
  return nlohmann::json{{"python", c.python},
                        {"worker_dir", c.worker_dir.string()},
                        {"log_dir", c.log_dir.string()},
                        {"scratch_dir", c.scratch_dir.string()},
                        {"config_env", c.env},
                        {"sandbox", sandbox::mode_name(c.sandbox)},
                        {"env", env},
                        {"read", read},
                        {"threads", t.threads},
                        {"reference", t.reference ? t.reference->pid() : 0},
                        {"shm", t.reference ? t.reference->shm_dir().string() : ""}}
      .dump();
}

int min_cpus_beside() {
  if (const char* v = std::getenv("KBV_WARM_BESIDE_MIN_CPUS"); v && *v) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end && *end == '\0' && n > 0) return static_cast<int>(n);
  }
  return kMinCpusBeside;
}

// A CPU of its own for a replacement's start-up, where the host has kMinCpusBeside CPUs or more:
// one no other kbv evaluation holds (a pair's own lease included), the worker's group pinned to
// it. None when none is free or the pin fails: settle() then waits for the worker as before.
std::unique_ptr<CpuLease> start_beside(WorkerProcess& w) {
  if (static_cast<int>(affinity_of(0).size()) < min_cpus_beside()) return nullptr;
  auto lease = std::make_unique<CpuLease>(1);
  if (lease->shared() > 0 || lease->budget().cpus.size() != 1) return nullptr;
  if (!w.pin_cpus(lease->budget().cpus).empty()) return nullptr;
  return lease;
}

}  // namespace

std::string warm_pool_off_reason(const WorkerConfig& config) {
  if (config.warm_workers <= 0) return "--warm-workers 0";
  if (config.sandbox == sandbox::Mode::off)
    return "--sandbox off: a candidate runs as the same user as a worker waiting for the next one and could "
           "signal, trace or write it";
  if (config.sandbox == sandbox::Mode::best_effort)
    if (std::string why = sandbox::refusal(sandbox::Mode::strict, sandbox::probe()); !why.empty())
      return "--sandbox best-effort without every layer (" + why + ")";
  return "";
}

std::unique_ptr<WorkerProcess> WarmPool::take(const WorkerConfig& config, const Env& env, const WorkerTarget& target,
                                              std::chrono::milliseconds ready, bool& warm, std::string& error) {
  warm = false;
  Env fixed = env;
  fs::path extensions_dir;
  if (auto it = fixed.find("TORCH_EXTENSIONS_DIR"); it != fixed.end()) {
    extensions_dir = it->second;
    fixed.erase(it);
  }
  const std::string key = key_of(config, fixed, target);
  if (!off_reason(config).empty() || !target.reference || target.warm) {
    clear();
    return WorkerProcess::start("candidate", config, env, error, target);
  }
  if (key != key_) clear();  // workers of another reference or environment
  key_ = key;
  config_ = config;
  env_ = fixed;
  reference_ = target.reference;
  read_ = target.read;
  threads_ = target.threads;
  settle(ready, true);
  std::unique_ptr<WorkerProcess> w;
  while (!w && !slots_.empty()) {
    w = std::move(slots_.front().worker);
    const bool pinned = slots_.front().beside != nullptr;
    slots_.erase(slots_.begin());  // its CPU's lease goes with it
    if (!w->hand_build(extensions_dir).empty() || (pinned && !w->unpin_cpus().empty()))
      w.reset();  // stopped; the next one, or a fresh one
  }
  warm = w != nullptr;
  if (!w) w = WorkerProcess::start("candidate", config, env, error, target);
  if (w && expect_next_) refill();  // the next candidate's, starting while this one loads
  return w;
}

const std::string& WarmPool::off_reason(const WorkerConfig& config) {
  const std::pair<sandbox::Mode, int> asked{config.sandbox, config.warm_workers};
  if (!off_ || off_->first != asked) off_.emplace(asked, warm_pool_off_reason(config));
  return off_->second;
}

void WarmPool::settle(std::chrono::milliseconds ready, bool all) {
  // Any answer means it serves requests (a worker of before the ping op answers it as unknown).
  std::erase_if(slots_, [&](Slot& s) {
    if (s.beside && !all) return false;  // starting on a CPU of its own: nothing to wait for
    const Reply::Status st = s.worker->call(msg::to_json(msg::PingRequest{}), ready).status;
    return st != Reply::Status::ok && st != Reply::Status::failed;
  });
}

void WarmPool::refill() {
  if (key_.empty() || !reference_ || !reference_->alive() || interrupted()) return;
  WorkerTarget target;
  target.reference = reference_;
  target.read = read_;
  target.threads = threads_;  // the zygote of its candidates (pinned to their CPUs when taken)
  target.warm = true;
  while (static_cast<int>(slots_.size()) < config_.warm_workers) {
    std::string error;
    auto w = WorkerProcess::start("candidate", config_, env_, error, target);
    if (!w) return;  // the next take starts its candidate itself, and says why if that fails too
    auto beside = start_beside(*w);
    slots_.push_back({std::move(w), std::chrono::steady_clock::now(), std::move(beside)});
  }
}

void WarmPool::clear() {
  slots_.clear();
  key_.clear();
  reference_ = nullptr;
}

std::vector<WarmPool::Held> WarmPool::held() const {
  std::vector<Held> out;
  for (const auto& s : slots_)
    out.push_back({s.worker->pid(), s.started, s.beside ? s.beside->budget().cpus : std::vector<int>{}});
  return out;
}

}  // namespace kbv
