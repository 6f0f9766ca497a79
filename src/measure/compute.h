// Kernel attribution of one measured call (docs/MEMORY.md, "Kernels"): which kernels ran, the
// candidate's own or a library's, and their GPU time. Pure functions; the worker feeds them
// CUPTI's kernel records and the launch sites it saw.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::compute {

enum class Origin { own, library, unknown };

struct KernelRun {
  std::string name;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  Origin origin = Origin::unknown;
};

// Where a kernel was launched from decides whose it is: the shared object that holds the launch
// (the host stub of a <<<>>> launch, or the first caller outside the CUDA runtime and driver).
// Own: a file under one of `own_roots` (the candidate's extension build folder, Triton's cache).
// Library: any other file. Unknown: no file (the launch site could not be resolved).
Origin classify_launcher(const std::string& shared_object, const std::vector<std::string>& own_roots);

// The record's `compute` object: {method, own_share, own: [{name, calls, ms}], library: [...],
// unattributed: [...], kernels, device_ms}; lists sorted by time, top `top` each.
nlohmann::json compute_json(const std::vector<KernelRun>& runs, const std::string& method, size_t top = 20);

// The `no_custom_compute` finding (reject, T11) when kernels ran and none of them was the
// candidate's own (unattributed kernels give the benefit of the doubt); null otherwise.
nlohmann::json no_custom_compute_finding(const nlohmann::json& compute);

}  // namespace kbv::compute
