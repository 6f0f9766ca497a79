#include "check/precision.h"

#include <algorithm>

namespace kbv {
using nlohmann::json;

std::optional<at::ScalarType> precision_scalar_type(const std::string& precision) {
  if (precision == "fp32") return at::kFloat;
  if (precision == "bf16") return at::kBFloat16;
  if (precision == "fp16") return at::kHalf;
  return std::nullopt;
}

at::Tensor cast_floating(const at::Tensor& t, at::ScalarType dtype) {
  if (!at::isFloatingType(t.scalar_type()) || t.scalar_type() == dtype) return t;
  return t.to(dtype);
}

namespace {

// Python's names, as tensor handles and records spell dtypes elsewhere.
std::string python_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    case at::kDouble: return "float64";
    default: return c10::toString(t);
  }
}

}  // namespace

json reference_error(const at::Tensor& reduced, const at::Tensor& fp32, const Tolerance& tol) {
  json j = {{"dtype", python_dtype(reduced.scalar_type())}, {"numel", reduced.numel()}};
  if (reduced.sizes() != fp32.sizes()) {
    j["note"] = "the fp32 model returns another shape: " + shape_string(fp32.sizes());
    return j;
  }
  if (!at::isFloatingType(reduced.scalar_type()) || !at::isFloatingType(fp32.scalar_type())) {
    j["note"] = "not a floating output";
    return j;
  }
  // bf16/fp16 -> fp32 is exact, so this is the float64 comparison without whole-output float64
  // copies (compare_tensors works in chunks).
  at::Tensor f = fp32.detach();
  at::Tensor r = reduced.detach().to(f.device()).to(f.scalar_type());
  Comparison c = compare_tensors(f, r, tol);
  j["max_abs_error"] = c.max_abs_error;
  j["rel_l2_error"] = c.rel_l2_error;
  j["mismatches"] = c.mismatches;
  j["tolerance_used"] = 0.0;
  j["rel_l2_used"] = c.rel_l2_error >= 0 && tol.rel_l2 > 0 ? c.rel_l2_error / tol.rel_l2 : 0.0;
  j["nonfinite"] = int64_t{0};
  if (reduced.numel() == 0) return j;
  f = f.reshape(-1);
  r = r.reshape(-1);
  double used_max = 0;
  int64_t nonfinite = 0;
  constexpr int64_t chunk = int64_t{1} << 24;
  for (int64_t offset = 0; offset < f.numel(); offset += chunk) {
    const int64_t n = std::min(chunk, f.numel() - offset);
    at::Tensor fc = f.narrow(0, offset, n).to(at::kDouble), rc = r.narrow(0, offset, n).to(at::kDouble);
    at::Tensor both = rc.isfinite().logical_and(fc.isfinite());
    at::Tensor used = ((rc - fc).abs() / (tol.atol + tol.rtol * fc.abs())).masked_fill_(both.logical_not(), 0.0);
    used_max = std::max(used_max, used.max().item<double>());
    nonfinite += fc.isfinite().logical_and(rc.isfinite().logical_not()).sum().item<int64_t>();
  }
  j["tolerance_used"] = used_max;
  j["nonfinite"] = nonfinite;
  return j;
}

}  // namespace kbv
