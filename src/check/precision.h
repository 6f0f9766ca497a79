// Precision modes, the worker's half (docs/PRECISION.md): the dtype of a mode, casting floating
// inputs to it, and the reference's own error: how far the reference computed in bf16/fp16 is
// from the same model computed in fp32 on the same (cast-back) inputs, in units of the tolerance.
#pragma once
#include <optional>
#include <string>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "check/compare.h"

namespace kbv {

// fp32 -> Float, bf16 -> BFloat16, fp16 -> Half; nullopt for an unknown name.
std::optional<at::ScalarType> precision_scalar_type(const std::string& precision);

// A floating tensor cast to `dtype`; integer and bool tensors untouched (labels, indices).
at::Tensor cast_floating(const at::Tensor& t, at::ScalarType dtype);

// The reduced-precision reference output `reduced` against `fp32` (the same model in fp32 on the
// same inputs). {"dtype", "numel", "max_abs_error", "rel_l2_error", "mismatches" (outside the
// tolerance), "tolerance_used" (max over finite elements of |r-f| / (atol + rtol*|f|): 1.0 means
// the reference alone uses the whole elementwise tolerance), "rel_l2_used" (rel_l2_error / rel_l2),
// "nonfinite" (elements non-finite in `reduced` where `fp32` is finite: overflow)}.
nlohmann::json reference_error(const at::Tensor& reduced, const at::Tensor& fp32, const Tolerance& tolerance);

}  // namespace kbv
