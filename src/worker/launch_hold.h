// The launch hold (TimingProtocol::launch_hold_us, docs/TIMING.md): every sample starts on an idle
// GPU (the L2 flush ends with a device synchronisation), so without it the GPU waits between the
// start event and the call's first kernel for as long as the host takes to launch it, and that
// launch is slower in some process states than in others (after a served draw: 0.1 ms against
// 0.03 ms, H200, 2026-12-04). Held N microseconds before the start event (a sleep kernel on the
// calling stream), the GPU reaches the interval with the launch already queued; what the host does
// beyond N stays inside the interval. GPU builds only.
#pragma once
#ifdef KBV_WITH_CUDA
#include <cstdint>

#include "worker/cuda_check.h"

namespace kbv {

class LaunchHold {
 public:
  // `us` clamped to [0, kMaxLaunchHoldUs]; the hold in SM cycles at `expected_mhz` (the clock the
  // samples run at), else at the device's peak clock.
  LaunchHold(double us, double expected_mhz);
  double us() const { return us_; }
  bool active() const { return cycles_ > 0; }
  // Records the hold event, then queues the sleep on `stream` (before the start event).
  void queue(cudaStream_t stream);
  // GPU time from the hold event to `start` (the hold as it ran).
  float held_ms(cudaEvent_t start) const;

 private:
  double us_ = 0;
  int64_t cycles_ = 0;
  Event hold_;
};

}  // namespace kbv
#endif
