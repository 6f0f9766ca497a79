// Memory accounting of measured forward calls (docs/MEMORY.md): pure functions over event
// streams, with no CUDA, torch or CUPTI in sight, so that every figure is unit-tested on the CPU.
//
// Two views of the device memory of one process during a window of calls:
//   - the device view (CUPTI memory activity): every allocation made through the CUDA APIs
//     (cudaMalloc, cuMemAlloc, cudaMallocAsync, cuMemCreate, ... from any library), address,
//     bytes, time;
//   - torch's view (the caching allocator's trace hooks): its segments (the device allocations it
//     owns) and its blocks (what tensors hold; max_memory_allocated counts these).
// A device allocation is torch's when the allocator reported a segment at that address right
// after it; every other device allocation was taken outside PyTorch.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::memory {

// One device allocation or release as CUPTI records it.
struct DeviceEvent {
  uint64_t time_ns = 0;
  bool alloc = true;  // false: a release
  uint64_t address = 0;
  uint64_t bytes = 0;     // of the allocation; releases may carry 0 (the ledger knows the size)
  std::string source;     // the shared object that asked for it, when CUPTI says
};

// One event of torch's caching allocator (c10 TraceEntry), on the same clock.
struct TorchEvent {
  enum class Action { block_alloc, block_free, segment_alloc, segment_free };
  uint64_t time_ns = 0;
  Action action = Action::block_alloc;
  uint64_t address = 0;
  uint64_t bytes = 0;
};

// One measured call: its time window and torch's own statistics around it.
struct CallWindow {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  int64_t torch_before = 0;  // torch allocated bytes right before the call (inputs, weights, buffers)
  int64_t torch_peak = 0;    // max_memory_allocated over the call (peak stats reset before it)
  int64_t torch_after = 0;   // torch allocated bytes after the call, its outputs dropped
};

struct CallMemory {
  int64_t torch_peak = 0;      // torch's view: max_memory_allocated
  int64_t non_torch_peak = 0;  // device memory held outside torch, peak over the call
  int64_t peak = 0;            // the larger view: peak of torch-allocated + non-torch bytes
  int64_t at_rest = 0;         // torch allocated + non-torch live after the call, outputs dropped
  int64_t non_torch_at_rest = 0;
};

struct Account {
  std::vector<CallMemory> calls;
  int64_t torch_peak = 0;      // max over the calls
  int64_t non_torch_peak = 0;  // max over the calls
  int64_t peak = 0;            // max over the calls of the combined peak (>= torch_peak)
  int64_t persistent = 0;      // at rest after the first call, minus the inputs kbv holds
  double growth_per_call = 0;  // (at rest after the last call - after the first) / (calls - 1)
  bool exact = true;           // false: no torch events; peak = torch peak + non-torch peak (a bound)
  // The largest allocation outside torch live during a call, for the finding's message.
  uint64_t largest_non_torch_bytes = 0;
  std::string largest_non_torch_source;
  std::vector<std::string> notes;  // e.g. releases of memory allocated before the ledger began
};

// `device`: the whole ledger since the process started recording (allocations before the first
// window count as live when they were not released). `torch`: the allocator's events over the
// same period. `input_bytes`: bytes of the call's inputs, held by kbv in torch memory.
Account account(std::vector<DeviceEvent> device, std::vector<TorchEvent> torch, const std::vector<CallWindow>& calls,
                int64_t input_bytes);

// The device allocations that are torch's segments, per index of `device` (sorted by time). Only
// the allocator's own reports decide: CUPTI's `source` names a file, and a candidate can name its
// extension like PyTorch's library.
std::vector<bool> torch_owned(const std::vector<DeviceEvent>& device, const std::vector<TorchEvent>& torch);

// One side (candidate or a baseline) as the record's `memory` object holds it:
// {torch_peak_bytes, non_torch_peak_bytes, peak_bytes, persistent_bytes, growth_bytes_per_call}.
nlohmann::json side_json(const Account& a);

// CPU: peak resident-set growth of calls (VmHWM reset before each call).
struct RssCall {
  int64_t rss_before = 0;  // VmRSS right before the call
  int64_t hwm_after = 0;   // VmHWM after the call (reset to VmRSS before it)
  int64_t rss_after = 0;   // VmRSS after the call, outputs dropped
};
nlohmann::json rss_side_json(const std::vector<RssCall>& calls);

// VmRSS and VmHWM in bytes from the text of /proc/<pid>/status ("VmRSS:\t  1234 kB" lines): false,
// both -1, when either is missing or unreadable. Parsed by hand: the worker's iostream number
// extraction crashed on the GPU machine (a libstdc++ mix in the worker module; docs/results).
bool parse_status_rss(const std::string& status, int64_t& rss, int64_t& hwm);

// The record's `memory` object and its findings from the worker replies: `candidate` and each
// baseline are side objects (or {"measured": false, "reason"}).
struct MemoryVerdict {
  nlohmann::json memory;
  nlohmann::json findings = nlohmann::json::array();
};
inline constexpr int64_t kLeakThresholdBytes = 1 << 20;      // growth per call that is a leak
inline constexpr int64_t kNonTorchThresholdBytes = 1 << 20;  // beyond the baselines' own
MemoryVerdict memory_verdict(const nlohmann::json& candidate, const nlohmann::json& baselines);

std::string format_bytes(double bytes);

}  // namespace kbv::memory
