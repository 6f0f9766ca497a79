// The timing loop of one callable (docs/TIMING.md), run alike for candidates and baselines.
// GPU: before each sample, outside the interval, fresh input values into the live buffers and an
// L2 flush; the interval is CUDA events on the calling stream cross-checked against the host clock
// around a full device synchronisation (work on any stream is inside it); SM clock read around it.
// CPU: the same with the steady clock and a cache-flush buffer.
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "measure/measure.h"
#include "proto/messages.h"

namespace kbv {

struct TimingConfig {
  bool cuda = false;
  StopRule rule;
  uint64_t flush_bytes = 0;   // 0: default (measure.h)
  double launch_hold_us = 0;  // GPU: the hold before each start event (TimingProtocol::launch_hold_us)
  bool flush = true;          // a cache flush before each sample (TimingProtocol::l2_flush)
  // GPU: the sample is the cuda-event time even where the host clock disagrees (upstream's loop,
  // TimingProtocol::loop); the disagreement is still counted in `mismatches`.
  bool events_sample = false;
  // Called with the call's index just before each call's interval starts and just after it ends
  // (warm-up calls alike), outside the interval: the candidate's worker marks them on its reply
  // channel so that the supervisor's own clock bounds every sample (docs/TIMING.md).
  std::function<void(int)> on_start, on_end;
};

// Raw samples and what was seen while taking them; the supervisor computes the statistics.
struct TimingRun {
  std::string method;                 // "cuda-events+host-sync" | "steady-clock"
  std::vector<double> kept_ms;
  std::vector<double> discarded_ms;   // throttled samples
  std::vector<int> discarded_at;      // their sample numbers
  int mismatches = 0;                 // samples where events and the host clock disagreed
  double max_mismatch_ms = 0;         // the largest (host - sync overhead) - events among them
  double overhead_ms = 0;             // the timer on an empty interval
  double sync_overhead_ms = 0;        // host clock minus events on an empty interval (GPU)
  double host_spread_ms = 0;          // q90 - q50 of the empty host intervals
  double expected_mhz = 0;            // highest SM clock seen during the warm-up
  double sm_mhz_min = 0, sm_mhz_max = 0;  // SM clock range seen around the samples
  double mem_mhz_min = 0, mem_mhz_max = 0;  // memory clock range seen around the samples
  uint64_t reasons_seen = 0;          // every NVML clocks-event reason bit seen around the samples
  std::string clock_source = "none";  // "nvml" or "none"
  int throttled_kept = 0;             // throttled samples kept after max_discards
  uint64_t flush_bytes = 0;           // 0: no flush
  bool events_sample = false;         // the samples are the cuda-event times (TimingConfig::events_sample)
  double sampling_s = 0;              // wall time of the sampling phase
  // GPU: median host time from the start event's record to the call's return. The device waits
  // for the first launch, so this much of the interval can be the host's (-1 on the CPU, where
  // the whole interval is).
  double host_call_ms = -1;
  double launch_hold_us = 0;          // the hold applied (0: none; the CPU engine has none)
  double launch_hold_held_ms = 0;     // median GPU time of the hold (hold event to start event)
  int launch_hold_late = 0;           // samples whose launch outlasted the hold (the rest is timed)
  StopReason stop = StopReason::none;
  msg::TimeReply to_reply() const;
};

// prepare(index): the values of call `index` into the live buffers, outside the interval; calls
// are numbered from 0 over the warm-up and then the samples (sample s is call warmup + s).
// call(): one forward call. after(sample, index): after the interval, device idle (spot checks).
// Exceptions of call() propagate; CUDA errors become std::runtime_error.
TimingRun run_timing(const TimingConfig& config, const std::function<void(int)>& prepare,
                     const std::function<void()>& call, const std::function<void(int, int)>& after);

// ATen's intra-op parallelism off (one thread) from on() to the end of the object's life. libgomp's
// idle workers spin for milliseconds after a parallel region, on cores someone else is about to
// measure on: work done beside a measurement (a fresh draw served to the timed candidate, the
// audit's sampled call) runs serially. On a 2-core machine a served draw run in parallel made the
// candidate's next timed ReLU 3-17x slower than the same code timed as the baseline.
class SerialIntraOp {
 public:
  SerialIntraOp() = default;
  SerialIntraOp(const SerialIntraOp&) = delete;
  SerialIntraOp& operator=(const SerialIntraOp&) = delete;
  void on() {
    if (saved_ > 1 && !on_) {
      at::set_num_threads(1);
      on_ = true;
    }
  }
  ~SerialIntraOp() {
    if (on_) at::set_num_threads(saved_);
  }

 private:
  int saved_ = at::get_num_threads();
  bool on_ = false;
};

// dst's bytes replaced by src's, with memcpy or cudaMemcpy: no dispatcher, so no operator
// override the candidate registered sees it. Both contiguous, same size and device; throws if not.
void copy_bytes(at::Tensor& dst, const at::Tensor& src);

// Live inputs at fixed addresses: own clones of set 0, refilled from set k before each sample.
struct LiveInputs {
  std::vector<std::vector<at::Tensor>> sets;  // per set, the tensor arguments in order
  std::vector<at::Tensor> live;
  void init();        // live = clones of sets[0]
  void load(int k);   // copy_bytes(live[i], sets[k mod |sets|][i]): no dispatcher, as for fresh draws
};

// Spot checks of timed outputs: after a call returns, positions drawn from a secret RNG (seeded by
// the supervisor); the values there are reported for the reference to compare. An entry's "set"
// is the call's index (run_timing), from which the reference knows the inputs of that call.
struct SpotSampler {
  std::mt19937_64 rng;
  int per_output = 2;
  int max_calls = 0;  // 0: every call
  int calls = 0;
  nlohmann::json entries = nlohmann::json::array();  // {sample, set, output, index, value}
  void take(int sample, int set, const std::vector<at::Tensor>& outputs);
};

// Reference side: entries against the expected outputs of the call they name (`expected(index)`:
// null when there is no such call), |a - e| <= atol + rtol |e| (NaN only against NaN, integers
// exactly).
struct SpotResult {
  int checked = 0, failed = 0;
  std::string first_failure;
};
SpotResult spot_compare(const nlohmann::json& entries,
                        const std::function<const std::vector<at::Tensor>*(int64_t)>& expected, double atol,
                        double rtol);

// Copy bandwidth (bytes read + written per second) of the device (cudaMemcpy device to device)
// or the host (memcpy), best of several copies of a large buffer.
struct Bandwidth {
  double bytes_per_s = 0;
  uint64_t buffer_bytes = 0;
  int copies = 0;
  std::string method;
};
Bandwidth calibrate_bandwidth(bool cuda);

}  // namespace kbv
