#include "worker/launch_hold.h"

#ifdef KBV_WITH_CUDA
#include <algorithm>

#include <ATen/cuda/Sleep.h>

#include "measure/measure.h"

namespace kbv {

LaunchHold::LaunchHold(double us, double expected_mhz) : us_(std::clamp(us, 0.0, kMaxLaunchHoldUs)) {
  if (us_ <= 0) return;
  double mhz = expected_mhz;
  if (mhz <= 0) {
    int dev = 0, khz = 0;
    check_cuda(cudaGetDevice(&dev), "getting the device");
    check_cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev), "reading the SM clock rate");
    mhz = khz / 1000.0;
  }
  cycles_ = std::max<int64_t>(1, static_cast<int64_t>(us_ * mhz));
}

void LaunchHold::queue(cudaStream_t stream) {
  check_cuda(cudaEventRecord(hold_.e, stream), "recording the hold event");
  at::cuda::sleep(cycles_);
  check_cuda(cudaGetLastError(), "queuing the hold");
}

float LaunchHold::held_ms(cudaEvent_t start) const {
  float h = 0;
  check_cuda(cudaEventElapsedTime(&h, hold_.e, start), "reading the hold");
  return h;
}

}  // namespace kbv
#endif
