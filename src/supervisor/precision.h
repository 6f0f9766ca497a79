// Precision modes (docs/PRECISION.md): the evaluation in fp32, bf16 or fp16 as KernelBench-Verified
// runs it. The reference model's floating parameters and buffers and the floating inputs are cast
// to the mode's dtype (integer inputs untouched), the candidate is built the same way, and the
// tolerance follows the precision. This half has no torch: names, tolerances, the dtype-fallback
// diagnosis and the aggregation of the reference's own error; the casting is the worker's
// (src/check/precision.h).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "record/record.h"  // kPrecisions
#include "supervisor/verdict.h"

namespace kbv {

bool valid_precision(const std::string& precision);

// "float32", "bfloat16", "float16" (the dtype names of tensor handles); empty for an unknown name.
std::string precision_dtype(const std::string& precision);

// KernelBench-Verified's tolerance: fp32 1e-3, bf16 and fp16 1e-2.
double precision_tolerance(const std::string& precision);

// Sets the protocol's precision and scales its tolerance to it: below fp32, atol, rtol and the
// relative-L2 floor become at least precision_tolerance() (kernelbench-paper's 1e-2 stays); at
// fp32 the protocol's own tolerance stays (kernelbench-main's 1e-4). A --tolerance given by the
// user is applied after this and wins.
void set_precision(Protocol& protocol, const std::string& precision);

// A candidate that fails on reduced-precision inputs with an error that asks for float32 (a
// TORCH_CHECK on kFloat, data_ptr<float>() on a bf16 tensor, "expected scalar type Float"): the
// message a user acts on, or nullopt when the failure is something else. `args` are the input
// handles the candidate received (the reference's "inputs" reply), whose dtypes show what it got.
std::optional<std::string> dtype_fallback_message(const std::string& error, const std::string& precision,
                                                  const nlohmann::json& args);

// Folds one draw's per-output reference errors (the worker's "reference_error" list) into the
// worst seen so far per output (`worst`: a JSON array, null at first).
void merge_reference_error(nlohmann::json& worst, const nlohmann::json& draw, const std::string& distribution);


}  // namespace kbv
