// The measure phase of an evaluation (docs/MEMORY.md): after every correctness check passed,
// memory of a few untimed calls of the candidate and of the reference under the TF32 and FP32
// baselines, and the candidate's kernel attribution; fills the record's `memory`, `compute` and
// their findings (non_torch_allocation, memory_leak: warn; no_custom_compute: reject, T11).
#pragma once
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv {

inline constexpr int kMemoryRepeats = 3;  // measured calls per side (growth per call needs >= 2)

// `seed`: the draw the candidate and the baselines compute on (never one of the checked draws'
// secrets reused: any fresh seed does). Failures leave `memory.measured` false with the reason;
// they never change a verdict, except that a rejecting finding (no_custom_compute) is added.
void measure_phase(Record& record, WorkerProcess& candidate, WorkerProcess& reference,
                   const EvalOptions& options, uint64_t seed);

// Merges a worker's `compute` into the record: a measured GPU attribution ("cupti") wins over
// any other; otherwise an existing `compute` (the CPU audit's) is kept. Returns the finding to
// add (no_custom_compute), if any. `upstream` (--protocol kernelbench, which has no runtime
// audits): the finding only warns.
std::optional<Finding> merge_compute(Record& record, const nlohmann::json& compute, bool upstream = false);

}  // namespace kbv
