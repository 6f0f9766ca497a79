#include "worker/timing.h"


#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "worker/clock_probe.h"
#include "worker/cuda_check.h"
#include "worker/l2_flush.h"
#include "worker/launch_hold.h"

#ifdef KBV_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace kbv {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

void mark(const std::function<void(int)>& hook, int index) {
  if (hook) hook(index);
}

double spread_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.9) - quantile_sorted(v, 0.5);
}

// A sample is throttled when the SM clock is more than this far below the expected clock. Under a
// heavy load the software power cap holds the clock a few percent below its peak as a steady
// state; that is the clock users get and is not discarded (docs/TIMING.md). Measured on the H200
// (docs/results/2026-12-05-gpu.md): every NVML reading around 793 honest samples in 11
// evaluations was at the 1980 MHz expected clock; nvidia-smi every 100 ms beside them saw one
// busy dip to 1875 MHz (5.3% below, software power cap 0x4) under a sustained FP32 matmul. 10%
// keeps about twice that dip's margin, so it stays.
constexpr double kClockDropTolerance = 0.10;

#ifdef KBV_WITH_CUDA
TimingRun run_gpu(const TimingConfig& config, const std::function<void(int)>& prepare,
                  const std::function<void()>& call, const std::function<void(int, int)>& after) {
  TimingRun run;
  run.method = "cuda-events+host-sync";
  std::optional<L2Flush> flush;
  if (config.flush) flush.emplace(config.flush_bytes);
  run.flush_bytes = flush ? flush->bytes() : 0;
  run.events_sample = config.events_sample;
  const ClockProbe& nvml = ClockProbe::instance();
  run.clock_source = nvml.ok() ? "nvml" : "none";
  Event start, stop;

  // The timer's own cost: empty intervals, events and host clock.
  std::vector<double> empty_event, empty_host, empty_gap;
  for (int i = 0; i < 30; ++i) {
    check_cuda(cudaDeviceSynchronize(), "synchronising");
    cudaStream_t s = c10::cuda::getCurrentCUDAStream().stream();
    auto t0 = Clock::now();
    check_cuda(cudaEventRecord(start.e, s), "recording an event");
    check_cuda(cudaEventRecord(stop.e, s), "recording an event");
    check_cuda(cudaDeviceSynchronize(), "synchronising");
    auto t1 = Clock::now();
    float ev = 0;
    check_cuda(cudaEventElapsedTime(&ev, start.e, stop.e), "reading an event");
    double host = ms_between(t0, t1);
    if (i < 5) continue;  // first intervals warm the driver paths up
    empty_event.push_back(ev);
    empty_host.push_back(host);
    empty_gap.push_back(host - ev);
  }
  run.overhead_ms = median_of(empty_event);
  run.sync_overhead_ms = std::max(0.0, median_of(empty_gap));
  run.host_spread_ms = spread_of(empty_host);

  // Warm-up: untimed calls on fresh values; the highest SM clock seen is the expected one.
  for (int i = 0; i < config.rule.warmup; ++i) {
    prepare(i);
    check_cuda(cudaDeviceSynchronize(), "synchronising before a warm-up call");
    mark(config.on_start, i);
    call();
    check_cuda(cudaDeviceSynchronize(), "synchronising after a warm-up call");
    mark(config.on_end, i);
    ClockReading c = nvml.read();
    if (c.known) run.expected_mhz = std::max(run.expected_mhz, c.sm_mhz);
  }

  // The launch hold (worker/launch_hold.h), in SM cycles at the clock the samples run at.
  LaunchHold hold(config.launch_hold_us, run.expected_mhz);
  run.launch_hold_us = hold.us();
  std::vector<double> host_call, held;
  auto t_begin = Clock::now();
  for (int sample = 0;; ++sample) {
    const int index = config.rule.warmup + sample;
    prepare(index);
    if (flush)
      flush->flush(sample);  // synchronises the device
    else
      check_cuda(cudaDeviceSynchronize(), "synchronising before a sample");  // prepare's copies done
    ClockReading before = nvml.read();
    cudaStream_t s = c10::cuda::getCurrentCUDAStream().stream();
    mark(config.on_start, index);
    auto t0 = Clock::now();
    if (hold.active()) hold.queue(s);
    check_cuda(cudaEventRecord(start.e, s), "recording the start event");
    const auto t_call = Clock::now();
    call();
    const double launched = ms_between(t0, Clock::now());
    host_call.push_back(launched);
    check_cuda(cudaEventRecord(stop.e, s), "recording the stop event");
    check_cuda(cudaDeviceSynchronize(), "synchronising after the call");
    auto t1 = Clock::now();
    mark(config.on_end, index);
    ClockReading after_clock = nvml.read();
    float ev = 0;
    check_cuda(cudaEventElapsedTime(&ev, start.e, stop.e), "reading the events");
    const double host = ms_between(t0, t1);
    const double slack = interval_slack_ms(ev, run.host_spread_ms);
    IntervalDecision d;
    if (hold.active()) {
      // The host clock ran through the hold: compared with the events without it. When they
      // disagree (work on another stream), the sample is the host clock from the call's entry,
      // so work that ran beside the hold is counted too (measure.h).
      const float h = hold.held_ms(start.e);
      held.push_back(h);
      if (launched > h) ++run.launch_hold_late;
      d = decide_held_interval(ev, std::max(0.0, host - h), ms_between(t_call, t1), run.sync_overhead_ms, slack);
    } else {
      d = decide_interval(ev, host, run.sync_overhead_ms, slack);
    }
    if (d.disagreed) {
      ++run.mismatches;
      run.max_mismatch_ms = std::max(run.max_mismatch_ms, d.ms - ev);
    }
    if (config.events_sample) d.ms = ev;  // upstream's loop: elapsed_time of the two events
    if (before.known && before.sm_mhz > run.expected_mhz && !(before.reasons & kThrottleHwBits))
      run.expected_mhz = before.sm_mhz;
    for (const ClockReading* c : {&before, &after_clock})
      if (c->known) {
        run.sm_mhz_min = run.sm_mhz_min == 0 ? c->sm_mhz : std::min(run.sm_mhz_min, c->sm_mhz);
        run.sm_mhz_max = std::max(run.sm_mhz_max, c->sm_mhz);
        if (c->mem_mhz > 0) {
          run.mem_mhz_min = run.mem_mhz_min == 0 ? c->mem_mhz : std::min(run.mem_mhz_min, c->mem_mhz);
          run.mem_mhz_max = std::max(run.mem_mhz_max, c->mem_mhz);
        }
        run.reasons_seen |= c->reasons;
      }
    if (throttled(before, after_clock, run.expected_mhz, kClockDropTolerance)) {
      if (static_cast<int>(run.discarded_ms.size()) < config.rule.max_discards) {
        run.discarded_ms.push_back(d.ms);
        run.discarded_at.push_back(sample);
      } else {
        ++run.throttled_kept;
        run.kept_ms.push_back(d.ms);
      }
    } else {
      run.kept_ms.push_back(d.ms);
    }
    after(sample, index);
    run.sampling_s = ms_between(t_begin, Clock::now()) / 1000.0;
    run.stop = should_stop(config.rule, run.kept_ms, run.sampling_s);
    if (run.stop != StopReason::none) break;
  }
  run.host_call_ms = median_of(host_call);
  if (!held.empty()) run.launch_hold_held_ms = median_of(held);
  check_cuda(cudaGetLastError(), "after the samples");
  return run;
}
#endif

TimingRun run_cpu(const TimingConfig& config, const std::function<void(int)>& prepare,
                  const std::function<void()>& call, const std::function<void(int, int)>& after) {
  TimingRun run;
  run.method = "steady-clock";
  std::optional<HostCacheFlush> flush;
  if (config.flush) flush.emplace(config.flush_bytes);
  run.flush_bytes = flush ? flush->bytes() : 0;
  std::vector<double> empty;
  for (int i = 0; i < 30; ++i) {
    auto t0 = Clock::now();
    auto t1 = Clock::now();
    empty.push_back(ms_between(t0, t1));
  }
  run.overhead_ms = median_of(empty);
  run.host_spread_ms = spread_of(empty);
  for (int i = 0; i < config.rule.warmup; ++i) {
    prepare(i);
    mark(config.on_start, i);
    call();
    mark(config.on_end, i);
  }
  auto t_begin = Clock::now();
  for (int sample = 0;; ++sample) {
    const int index = config.rule.warmup + sample;
    prepare(index);
    if (flush) flush->flush(sample);
    mark(config.on_start, index);
    auto t0 = Clock::now();
    call();
    auto t1 = Clock::now();
    mark(config.on_end, index);
    run.kept_ms.push_back(ms_between(t0, t1));
    after(sample, index);
    run.sampling_s = ms_between(t_begin, Clock::now()) / 1000.0;
    run.stop = should_stop(config.rule, run.kept_ms, run.sampling_s);
    if (run.stop != StopReason::none) break;
  }
  return run;
}

}  // namespace

msg::TimeReply TimingRun::to_reply() const {
  msg::TimeReply r;
  r.method = method;
  r.samples_ms = kept_ms;
  r.discarded_ms = discarded_ms;
  r.discarded_at = discarded_at;
  r.mismatches = mismatches;
  r.max_mismatch_ms = max_mismatch_ms;
  r.overhead_ms = overhead_ms;
  r.sync_overhead_ms = sync_overhead_ms;
  r.host_spread_ms = host_spread_ms;
  r.expected_mhz = expected_mhz;
  r.sm_mhz_min = sm_mhz_min;
  r.sm_mhz_max = sm_mhz_max;
  r.mem_mhz_min = mem_mhz_min;
  r.mem_mhz_max = mem_mhz_max;
  r.clock_reasons_seen = reasons_seen;
  r.clock_source = clock_source;
  r.throttled_kept = throttled_kept;
  r.flush_bytes = flush_bytes;
  if (events_sample) r.sample_clock = "events";
  r.sampling_s = sampling_s;
  r.host_call_ms = host_call_ms;
  r.launch_hold_us = launch_hold_us;
  r.launch_hold_held_ms = launch_hold_held_ms;
  r.launch_hold_late = launch_hold_late;
  r.stop = stop_reason_name(stop);
  return r;
}

TimingRun run_timing(const TimingConfig& config, const std::function<void(int)>& prepare,
                     const std::function<void()>& call, const std::function<void(int, int)>& after) {
#ifdef KBV_WITH_CUDA
  if (config.cuda) return run_gpu(config, prepare, call, after);
#endif
  if (config.cuda) throw std::runtime_error("timing on the GPU, but this worker was built without CUDA");
  return run_cpu(config, prepare, call, after);
}

void copy_bytes(at::Tensor& dst, const at::Tensor& src) {
  if (!dst.is_contiguous() || !src.is_contiguous() || dst.nbytes() != src.nbytes() ||
      dst.device() != src.device())
    throw std::runtime_error(fmt::format("copying a timing draw: {} bytes on {} into {} bytes on {} (both must be "
                                         "contiguous)",
                                         src.nbytes(), src.device().str(), dst.nbytes(), dst.device().str()));
  if (dst.nbytes() == 0) return;
  if (dst.is_cuda()) {
#ifdef KBV_WITH_CUDA
    check_cuda(cudaMemcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice),
               "copying a timing draw");
    return;
#else
    throw std::runtime_error("copying a timing draw on the GPU, but this worker was built without CUDA");
#endif
  }
  std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
}

void LiveInputs::init() {
  live.clear();
  if (sets.empty()) return;
  for (const auto& t : sets[0]) live.push_back(t.clone(at::MemoryFormat::Preserve));
}

void LiveInputs::load(int k) {
  if (sets.empty()) return;
  const auto& src = sets[static_cast<size_t>(k) % sets.size()];
  for (size_t i = 0; i < live.size() && i < src.size(); ++i) copy_bytes(live[i], src[i]);
}

void SpotSampler::take(int sample, int set, const std::vector<at::Tensor>& outputs) {
  if (max_calls > 0 && calls >= max_calls) return;
  ++calls;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const at::Tensor& t = outputs[o];
    const int64_t n = t.numel();
    if (n == 0) continue;
    at::Tensor flat = t.reshape(-1);
    for (int i = 0; i < per_output; ++i) {
      int64_t index = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      at::Tensor v = flat[index].to(at::kCPU);
      nlohmann::json value;
      if (at::isFloatingType(v.scalar_type())) {
        double x = v.to(at::kDouble).item<double>();
        value = std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
      } else if (v.scalar_type() == at::kBool) {
        value = v.item<bool>() ? 1 : 0;
      } else {
        value = v.to(at::kLong).item<int64_t>();
      }
      entries.push_back({{"sample", sample}, {"set", set}, {"output", o}, {"index", index}, {"value", value}});
    }
  }
}

SpotResult spot_compare(const nlohmann::json& entries,
                        const std::function<const std::vector<at::Tensor>*(int64_t)>& expected, double atol,
                        double rtol) {
  int checked = 0, failed = 0;
  std::string first;
  auto fail = [&](const std::string& why) {
    ++failed;
    if (first.empty()) first = why;
  };
  for (const auto& e : entries) {
    ++checked;
    if (!e.is_object() || !e.contains("set") || !e["set"].is_number_integer() || e["set"].get<int64_t>() < 0 ||
        !e.contains("output") || !e["output"].is_number_integer() || e["output"].get<int64_t>() < 0 ||
        !e.contains("index") || !e["index"].is_number_integer() || !e.contains("value")) {
      fail("a malformed spot entry: " + e.dump().substr(0, 200));
      continue;
    }
    const int64_t set = e["set"].get<int64_t>();
    const size_t out = e["output"].get<size_t>();
    const int64_t index = e["index"].get<int64_t>();
    const std::string call = e.contains("sample") ? e["sample"].dump() : "?";
    const std::vector<at::Tensor>* outputs = expected(set);
    if (outputs == nullptr || out >= outputs->size()) {
      fail(fmt::format("timed call {} reported output {} of input draw {}, which does not exist", call, out, set));
      continue;
    }
    at::Tensor flat = (*outputs)[out].reshape(-1);
    if (index < 0 || index >= flat.numel()) {
      fail(fmt::format("timed call {}: position {} is outside output {} ({} elements)", call, index,
                       out, flat.numel()));
      continue;
    }
    at::Tensor ev = flat[index].to(at::kCPU);
    const nlohmann::json& got = e["value"];
    bool ok;
    std::string got_text = got.dump();
    if (at::isFloatingType(ev.scalar_type())) {
      double x = ev.to(at::kDouble).item<double>();
      if (std::isnan(x)) {
        ok = got == "nan";
      } else if (std::isinf(x)) {
        ok = got == (x > 0 ? "inf" : "-inf");
      } else {
        ok = got.is_number() && std::fabs(got.get<double>() - x) <= atol + rtol * std::fabs(x);
      }
      if (!ok)
        fail(fmt::format("timed call {} (input draw {}): output {} at flat index {} is {}, expected {} "
                         "(a timed call returned a stale or wrong value)",
                         call, set, out, index, got_text, x));
    } else {
      int64_t x = ev.scalar_type() == at::kBool ? (ev.item<bool>() ? 1 : 0) : ev.to(at::kLong).item<int64_t>();
      ok = got.is_number_integer() && got.get<int64_t>() == x;
      if (!ok)
        fail(fmt::format("timed call {} (input draw {}): output {} at flat index {} is {}, expected {}",
                         call, set, out, index, got_text, x));
    }
  }
  return SpotResult{checked, failed, first};
}

Bandwidth calibrate_bandwidth(bool cuda) {
  // CPU: a buffer that a server's L3 may hold, so the floor is the cache's bandwidth, not DRAM's:
  // small inputs stay in the L3 through the flush, and an honest kernel must never fall below it.
  const uint64_t bytes = cuda ? (1ull << 30) : (16ull << 20);
  double best_s = 0;
  int copies = 0;
#ifdef KBV_WITH_CUDA
  if (cuda) {
    DeviceBuffer a(bytes), b(bytes);
    check_cuda(cudaMemset(a.p, 1, bytes), "filling the calibration buffer");
    Event start, stop;
    for (int i = 0; i < 12; ++i) {
      check_cuda(cudaDeviceSynchronize(), "synchronising");
      check_cuda(cudaEventRecord(start.e, nullptr), "recording");
      check_cuda(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, nullptr), "copying");
      check_cuda(cudaEventRecord(stop.e, nullptr), "recording");
      check_cuda(cudaEventSynchronize(stop.e), "synchronising");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start.e, stop.e), "reading events");
      if (i >= 2 && (best_s == 0 || ms / 1000.0 < best_s)) best_s = ms / 1000.0;
      ++copies;
    }
  }
#endif
  if (!cuda) {
    std::vector<unsigned char> a(bytes, 1), b(bytes, 0);
    for (int i = 0; i < 21; ++i) {
      auto t0 = Clock::now();
      std::memcpy(b.data(), a.data(), bytes);
      asm volatile("" : : "r"(b.data()) : "memory");
      double s = ms_between(t0, Clock::now()) / 1000.0;
      if (i >= 1 && (best_s == 0 || s < best_s)) best_s = s;
      ++copies;
    }
  }
  if (best_s <= 0) throw std::runtime_error("the copy bandwidth could not be measured");
  // A copy reads and writes every byte: 2 x bytes moved.
  return Bandwidth{2.0 * static_cast<double>(bytes) / best_s, bytes, copies,
                   cuda ? "cudaMemcpyAsync device-to-device, best of 10 after 2 warm-ups"
                        : "memcpy of 16 MiB, best of 20 after 1 warm-up"};
}

}  // namespace kbv
