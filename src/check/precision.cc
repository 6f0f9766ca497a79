#include "check/precision.h"

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
  Comparison c = compare_tensors(fp32.detach().to(at::kDouble), reduced.detach().to(at::kDouble), tol);
  j["max_abs_error"] = c.max_abs_error;
  j["rel_l2_error"] = c.rel_l2_error;
  j["mismatches"] = c.mismatches;
  j["tolerance_used"] = 0.0;
  j["rel_l2_used"] = c.rel_l2_error >= 0 && tol.rel_l2 > 0 ? c.rel_l2_error / tol.rel_l2 : 0.0;
  j["nonfinite"] = int64_t{0};
  if (reduced.numel() == 0) return j;
  at::Tensor r = reduced.detach().to(at::kDouble), f = fp32.detach().to(at::kDouble).to(r.device());
  at::Tensor both = r.isfinite().logical_and(f.isfinite());
  at::Tensor used = at::where(both, (r - f).abs() / (tol.atol + tol.rtol * f.abs()), at::zeros_like(r));
  j["tolerance_used"] = used.max().item<double>();
  j["nonfinite"] = f.isfinite().logical_and(r.isfinite().logical_not()).sum().item<int64_t>();
  return j;
}

}  // namespace kbv
