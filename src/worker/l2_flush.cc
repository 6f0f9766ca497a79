#include "worker/l2_flush.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#ifdef KBV_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace kbv {

#ifdef KBV_WITH_CUDA
namespace {
uint64_t gpu_flush_bytes(uint64_t requested) {
  if (requested) return requested;
  int dev = 0, l2 = 0;
  check_cuda(cudaGetDevice(&dev), "getting the device");
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "reading the L2 size");
  return std::max<uint64_t>(2ull * static_cast<uint64_t>(l2), kMinFlushBytes);
}
}  // namespace

L2Flush::L2Flush(uint64_t requested) : bytes_(gpu_flush_bytes(requested)), buffer_(bytes_) {}

void L2Flush::flush(int k) {
  cudaStream_t s = c10::cuda::getCurrentCUDAStream().stream();
  check_cuda(cudaMemsetAsync(buffer_.p, k & 0xff, bytes_, s), "flushing L2");
  // Persisting-L2 lines set by anyone (the candidate included) are reset before every sample.
  // Devices without persisting L2 (before Ampere) may refuse: nothing to reset there.
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess) (void)cudaGetLastError();
  check_cuda(cudaDeviceSynchronize(), "synchronising before a sample");
}
#endif

namespace {
uint64_t cpu_flush_bytes(uint64_t requested) {
  if (requested) return requested;
  // Twice the L3, but at most 64 MiB: a server's L3 (hundreds of MiB, shared by every core) would
  // make the flush cost far more than most calls; 64 MiB covers the private caches and this
  // core's share of the L3.
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::clamp<uint64_t>(l3 > 0 ? 2ull * static_cast<uint64_t>(l3) : 0, kMinFlushBytes, kMaxCpuFlushBytes);
}
}  // namespace

HostCacheFlush::HostCacheFlush(uint64_t requested) : buffer_(cpu_flush_bytes(requested)) {}

void HostCacheFlush::flush(int k) {
  std::memset(buffer_.data(), k & 0xff, buffer_.size());
  asm volatile("" : : "r"(buffer_.data()) : "memory");  // the writes must happen
}

}  // namespace kbv
