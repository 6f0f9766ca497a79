// CUDA runtime errors as exceptions, and the two RAII handles the measurement parts share
// (worker/l2_flush.h, worker/launch_hold.h, worker/timing.cc). GPU builds only.
#pragma once
#ifdef KBV_WITH_CUDA
#include <cstdint>
#include <stdexcept>

#include <cuda_runtime.h>
#include <fmt/format.h>

namespace kbv {

inline void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(fmt::format("CUDA error {} during timing: {}", what, cudaGetErrorString(err)));
}

struct Event {
  cudaEvent_t e = nullptr;
  Event() { check_cuda(cudaEventCreate(&e), "creating an event"); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(uint64_t bytes) { check_cuda(cudaMalloc(&p, bytes), "allocating the L2 flush buffer"); }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace kbv
#endif
