#include "worker/clock_probe.h"

#ifdef KBV_WITH_CUDA
#include <dlfcn.h>

#include <cuda_runtime.h>

namespace kbv {

const ClockProbe& ClockProbe::instance() {
  static const ClockProbe probe;
  return probe;
}

ClockProbe::ClockProbe() {
  using InitFn = int (*)();
  using HandleFn = int (*)(const char*, void**);
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto by_pci = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  clock_ = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  reasons_ = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!reasons_) reasons_ = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  int dev = 0;
  char bus[64] = {0};
  if (!init || !by_pci || !clock_ || init() != 0 || cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess || by_pci(bus, &device_) != 0) {
    device_ = nullptr;
  }
  // nvmlShutdown is reference-counted by NVML; leaving the library loaded is harmless.
}

ClockReading ClockProbe::read() const {
  ClockReading r;
  if (!ok()) return r;
  unsigned mhz = 0;
  if (clock_(device_, /*NVML_CLOCK_SM*/ 1, &mhz) != 0) return r;
  r.known = true;
  r.sm_mhz = mhz;
  unsigned mem = 0;
  if (clock_(device_, /*NVML_CLOCK_MEM*/ 2, &mem) == 0) r.mem_mhz = mem;
  unsigned long long bits = 0;
  if (reasons_ && reasons_(device_, &bits) == 0) r.reasons = bits;
  return r;
}

}  // namespace kbv
#endif
