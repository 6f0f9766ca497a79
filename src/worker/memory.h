// The worker side of memory measurement and kernel attribution (docs/MEMORY.md): runs a forward
// call a few times under torch's allocator statistics, CUPTI's memory ledger and (first call)
// CUPTI's kernel records, or under /proc/self RSS accounting on the CPU, and hands the figures
// to src/measure for accounting.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::worker_memory {

// Starts the device-memory ledger (CUPTI memory activity) and torch's allocator trace tracker,
// once per process; call before the model is built. A no-op on the CPU. Failures are remembered
// and reported by measure().
void begin_ledger(const std::string& device);

// Bytes torch's allocator holds for tensors now (0 on the CPU).
int64_t torch_allocated(const std::string& device);

struct MeasureOptions {
  std::string device;                  // "cpu" | "cuda"
  int repeats = 3;                     // measured calls (at least 2 for growth per call)
  int64_t input_bytes = 0;             // torch bytes of the inputs kbv holds for the calls
  bool kernels = false;                // attribute the first call's kernels (candidate only)
  std::vector<std::string> own_roots;  // folders whose shared objects are the candidate's
};

// Where the candidate's own compiled code lives: TORCH_EXTENSIONS_DIR (its load_inline and
// cpp_extension builds) and Triton's cache (TRITON_CACHE_DIR, else ~/.triton/cache).
std::vector<std::string> own_roots_from_environment();

// `call` runs one forward call, drops its outputs and waits for the device. Returns
// {"memory": {measured, method, reason | side fields}, "compute": {...} (only with kernels)}.
// Exceptions from `call` propagate.
nlohmann::json measure(const std::function<void()>& call, const MeasureOptions& options);

}  // namespace kbv::worker_memory
