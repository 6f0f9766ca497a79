// The SM and memory clocks and the clocks-event (throttle) reasons of the GPU, read through NVML
// around each timed sample (docs/TIMING.md). NVML is opened with dlopen: the build needs no NVML,
// the GPU machine has libnvidia-ml.so.1. GPU builds only.
#pragma once
#ifdef KBV_WITH_CUDA
#include "measure/measure.h"

namespace kbv {

class ClockProbe {
 public:
  // Opened once per worker, for the current CUDA device.
  static const ClockProbe& instance();
  bool ok() const { return device_ != nullptr; }
  ClockReading read() const;  // known = false when NVML is missing or the read fails

 private:
  ClockProbe();
  using ClockFn = int (*)(void*, int, unsigned*);
  using ReasonsFn = int (*)(void*, unsigned long long*);
  void* device_ = nullptr;
  ClockFn clock_ = nullptr;
  ReasonsFn reasons_ = nullptr;
};

}  // namespace kbv
#endif
