// Cache flushes before each timed sample (in the style of nvbench's l2flush.cuh): the device's
// L2 (a device buffer twice the L2, written on the calling stream, persisting lines reset), or
// the host's caches (a buffer written with memset). One concern: what the sample finds in cache.
#pragma once
#include <cstdint>
#include <vector>

#include "worker/cuda_check.h"

namespace kbv {

inline constexpr uint64_t kMinFlushBytes = 32ull << 20;
inline constexpr uint64_t kMaxCpuFlushBytes = 64ull << 20;

#ifdef KBV_WITH_CUDA
class L2Flush {
 public:
  // `requested` bytes, or 0: twice the device's L2, at least kMinFlushBytes.
  explicit L2Flush(uint64_t requested);
  uint64_t bytes() const { return bytes_; }
  // Writes the buffer (value k & 0xff) on the current stream, resets persisting L2 lines, then
  // synchronises the device: the next sample starts on an idle GPU with a cold L2.
  void flush(int k);

 private:
  uint64_t bytes_;
  DeviceBuffer buffer_;
};
#endif

class HostCacheFlush {
 public:
  // `requested` bytes, or 0: twice the L3, between kMinFlushBytes and kMaxCpuFlushBytes.
  explicit HostCacheFlush(uint64_t requested);
  uint64_t bytes() const { return buffer_.size(); }
  void flush(int k);  // memset of the buffer with k & 0xff; the writes happen

 private:
  std::vector<unsigned char> buffer_;
};

}  // namespace kbv
