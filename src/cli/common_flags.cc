#include "cli/common_flags.h"

#include "cli/worker_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "cli/parse.h"
#include "protocol/registry.h"
#include "supervisor/precision.h"
#include "supervisor/timing_phase.h"

namespace kbv::cli {
namespace fs = std::filesystem;

fs::path default_cache_dir() {
  if (const char* d = std::getenv("KBV_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kbv";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kbv";
  return fs::temp_directory_path() / "kbv-cache";
}

void CommonFlags::add(CLI::App* app) {
  app->add_option("--fast-build", fast_build,
                  "compile candidates with a precompiled torch/extension.h and lld (same machine code; "
                  "DESIGN.md, The compile step); off: as load_inline alone compiles")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app->add_option("--sandbox", sandbox,
                  "confinement of the workers that run candidate code (DESIGN.md, Sandbox): strict (refuse to run "
                  "when a layer cannot be applied), best-effort (what is available, recorded) or off")
      ->check(CLI::IsMember({"strict", "best-effort", "off"}))
      ->capture_default_str();
  app->add_option("--timing", timing, "time correct candidates and baselines (docs/TIMING.md)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app->add_option("--rse", rse, "stop sampling at this relative standard error (default 0.005)")
      ->check(kbv::cli::kPositive);
  app->add_option("--time-cap", time_cap, "seconds of sampling per timed callable at most (default 1)")
      ->check(kbv::cli::kPositive);
  app->add_option("--timing-inputs", timing_inputs,
                  "fresh (a new get_inputs() draw before every timed call, recomputed by the reference for spot "
                  "checks: no cache keyed on pointer, shape or content gains) or sets (--timing-sets input sets "
                  "cycled through); default fresh, sets when --timing-sets is given")
      ->check(CLI::IsMember({"fresh", "sets"}));
  app->add_option("--timing-sets", timing_sets, "input sets cycled through while timing with --timing-inputs sets "
                                                "(default 4)")
      ->check(kbv::cli::kPositive);
  app->add_option("--flush-bytes", flush_bytes, "bytes written to flush the caches before each sample (default: "
                                                "2 x L2 on a GPU, 2 x L3 up to 64 MiB on the CPU; 1: no flush)")
      ->check(kbv::cli::kPositive);
  app->add_option("--launch-hold-us", launch_hold_us,
                  fmt::format("GPU: microseconds the calling stream is held before each sample's start event, so the "
                              "host's launch is queued when the interval begins (default {:g}; 0: no hold; at most "
                              "{:g})",
                              kbv::kDefaultLaunchHoldUs, kbv::kMaxLaunchHoldUs))
      ->check(CLI::Range(0.0, kbv::kMaxLaunchHoldUs));
  app->add_option("--timing-pairs", timing_pairs,
                  fmt::format("paired rounds: each round times every baseline and the candidate in alternating "
                              "blocks (ABBA), the speedup and its 95% interval come from the rounds (default {} "
                              "with --protocol kbv, 0 with the kernelbench-* protocols; 0: candidate once, then cached baselines; at "
                              "most {})",
                              kbv::kDefaultTimingPairs, kbv::kMaxTimingPairs))
      ->check(CLI::Range(0, kbv::kMaxTimingPairs));
  app->add_option("--cpu-threads", cpu_threads,
                  fmt::format("CPU: threads for the candidate and the baselines alike, both pinned to the same set of "
                              "that many CPUs, picked by kbv (default {}; 0: every CPU kbv may run on; docs/TIMING.md)",
                              kbv::kDefaultCpuThreads))
      ->check(CLI::Range(0, 4096));
  app->add_option("--baselines", baselines, "baselines to time: tf32,fp32[,compile] (default tf32,fp32)")
      ->delimiter(',')
      ->check(CLI::IsMember({"tf32", "fp32", "compile"}));
  app->add_option("--device", device, "cuda or cpu (default: cuda when a GPU is visible)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  app->add_option("--protocol", protocol,
                  "kbv (kbv's own: 4 hidden distributions, 1e-3 and a relative-L2 floor, audits), kernelbench-paper "
                  "(the original paper: 1e-2), kernelbench-main (KernelBench main: 1e-4), kernelbench-verified "
                  "(KernelBench-Verified: 1e-3 and hidden configs); kernelbench = kernelbench-paper "
                  "(docs/PROTOCOLS.md)")
      ->check(CLI::IsMember(kbv::protocol_names()));
  app->add_option("--policy", policy,
                  "strict (a cheating finding of the static analysis rejects, the candidate never runs) or "
                  "lenient (findings are warnings, as upstream: docs/POLICY.md)")
      ->check(CLI::IsMember({"strict", "lenient"}))
      ->capture_default_str();
  app->add_option("--precision", precision,
                  "fp32, bf16 or fp16: the model and floating inputs cast to it, tolerance 1e-3 (fp32) or 1e-2 "
                  "(docs/PRECISION.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  app->add_option("--trials", trials, "correctness trials (each over every distribution)")->check(kbv::cli::kPositive);
  app->add_option("--flaky-reruns", flaky_reruns,
                  "identical re-runs (same seed and inputs) of the first failed check: one that passes makes the "
                  "verdict flaky, not wrong_output (default 2; 0 under the kernelbench-* protocols; at most 100)")
      ->check(CLI::Range(0, 100));
  app->add_option("--tolerance", tolerance, "atol = rtol = relative-L2 tolerance (default: the precision's)")
      ->check(kbv::cli::kPositive);
  app->add_option("--seed", seed, "fixed master seed (default: secret seeds from the OS)");
  app->add_option("--python", python, "Python with torch 2.11 for the workers (default: KBV_PYTHON or the build's)");
  app->add_option("--cache-dir", cache_dir, "build cache and worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
  app->add_option("--timeout-build", timeouts.build_s, "seconds to compile a candidate")
      ->capture_default_str()
      ->check(kbv::cli::kPositive);
  app->add_option("--timeout-load", timeouts.load_s, "seconds to load a problem or construct ModelNew")
      ->capture_default_str()
      ->check(kbv::cli::kPositive);
  app->add_option("--timeout-call", timeouts.call_s, "seconds for one forward call")
      ->capture_default_str()
      ->check(kbv::cli::kPositive);
}

kbv::EvalOptions CommonFlags::options() const {
  kbv::EvalOptions o;
  o.protocol = std::get<kbv::Protocol>(kbv::protocol_by_name(protocol));  // a name --protocol's check accepted
  if (trials > 0) o.protocol.trials = trials;
  if (flaky_reruns >= 0) o.protocol.flaky_reruns = flaky_reruns;
  kbv::set_precision(o.protocol, precision);
  if (tolerance > 0) o.protocol.atol = o.protocol.rtol = o.protocol.rel_l2 = tolerance;
  o.protocol.seed = seed;
  o.protocol.policy = *kbv::parse_policy(policy);
  o.protocol.timing.enabled = timing == "on";
  if (rse > 0) o.protocol.timing.rule.rse_target = rse;
  if (time_cap > 0) o.protocol.timing.rule.time_cap_s = time_cap;
  if (timing_sets > 0) o.protocol.timing.sets = timing_sets;
  if (!timing_inputs.empty()) o.protocol.timing.fresh = timing_inputs == "fresh";
  else if (timing_sets > 0) o.protocol.timing.fresh = false;
  if (flush_bytes > 0) o.protocol.timing.flush_bytes = static_cast<uint64_t>(flush_bytes);
  if (launch_hold_us >= 0) o.protocol.timing.launch_hold_us = launch_hold_us;
  if (cpu_threads >= 0) o.protocol.timing.cpu_threads = cpu_threads;
  if (!baselines.empty()) o.protocol.timing.baselines = baselines;
  if (timing_pairs >= 0) o.protocol.timing.pairs = timing_pairs;
  o.device = device;
  o.timeouts = timeouts;
  o.cache_dir = cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
  o.worker = kbv::default_worker_config(python);
  o.worker.log_dir = o.cache_dir / "logs";
  o.worker.sandbox = *kbv::sandbox::parse_mode(sandbox);
  o.fast_build = fast_build == "on";
  return o;
}

bool sandbox_preflight(const kbv::EvalOptions& o) {
  const kbv::sandbox::Availability a = kbv::sandbox::probe();
  if (std::string why = kbv::sandbox::refusal(o.worker.sandbox, a); !why.empty()) {
    std::fprintf(stderr, "kbv: %s\n", why.c_str());
    return false;
  }
  if (o.worker.sandbox == kbv::sandbox::Mode::best_effort) {
    std::string missing;
    for (int i = 0; i < kbv::sandbox::kLayerCount; ++i) {
      auto l = static_cast<kbv::sandbox::Layer>(i);
      if (!a.available(l))
        missing += fmt::format("{}{} ({})", missing.empty() ? "" : ", ", kbv::sandbox::layer_name(l), a.reason[l]);
    }
    if (!missing.empty()) std::fprintf(stderr, "kbv: --sandbox best-effort: running without %s\n", missing.c_str());
  }
  return true;
}

int default_build_jobs() { return std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 2); }

WorkerHooks worker_hooks() {
  WorkerHooks hooks;
  hooks.parse_options = [](const std::vector<std::string>& args, const WorkerHost& host,
                           std::string& error) -> std::optional<kbv::EvalOptions> {
    CLI::App parser{"a job's options", "options"};
    CommonFlags job;
    job.add(&parser);
    try {
      parser.parse(std::vector<std::string>(args.rbegin(), args.rend()));
    } catch (const CLI::ParseError& e) {
      error = e.what();
      return std::nullopt;
    }
    job.python = host.python;
    job.cache_dir = host.cache_dir;
    job.sandbox = host.sandbox;
    return job.options();
  };
  hooks.preflight = [](const kbv::EvalOptions& o) { return sandbox_preflight(o); };
  return hooks;
}

}  // namespace kbv::cli
