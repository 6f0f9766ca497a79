#include "check/compare.h"

#include <cmath>
#include <fmt/format.h>

namespace kbv {

std::string shape_string(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

nlohmann::json Comparison::to_json() const {
  nlohmann::json j = {{"passed", passed},
                      {"numel", numel},
                      {"mismatches", mismatches},
                      {"max_abs_error", max_abs_error},
                      {"rel_l2_error", rel_l2_error}};
  if (!reason.empty()) j["reason"] = reason;
  if (!first_bad_index.empty()) {
    j["first_bad_index"] = first_bad_index;
    j["expected_value"] = expected_value;
    j["actual_value"] = actual_value;
  }
  return j;
}

namespace {

std::vector<int64_t> unravel(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    int64_t n = sizes[d] > 0 ? sizes[d] : 1;
    index[d] = flat % n;
    flat /= n;
  }
  return index;
}

std::string fmt_index(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

}  // namespace

Comparison compare_tensors(const at::Tensor& expected_in, const at::Tensor& actual_in, const Tolerance& tol) {
  Comparison c;
  c.numel = expected_in.numel();
  if (expected_in.sizes() != actual_in.sizes()) {
    c.reason = fmt::format("shape {} where the reference gives {}", shape_string(actual_in.sizes()),
                           shape_string(expected_in.sizes()));
    return c;
  }
  if (expected_in.scalar_type() != actual_in.scalar_type()) {
    c.reason = fmt::format("dtype {} where the reference gives {}", c10::toString(actual_in.scalar_type()),
                           c10::toString(expected_in.scalar_type()));
    return c;
  }
  if (c.numel == 0) {
    c.passed = true;
    return c;
  }
  at::Tensor e = expected_in.detach();
  at::Tensor a = actual_in.detach().to(e.device());
  at::Tensor bad;
  if (!at::isFloatingType(e.scalar_type()) && !at::isComplexType(e.scalar_type())) {
    bad = a.ne(e);
    c.max_abs_error = at::isIntegralType(e.scalar_type(), /*includeBool=*/false)
                          ? (a.to(at::kDouble) - e.to(at::kDouble)).abs().max().item<double>()
                          : static_cast<double>(bad.sum().item<int64_t>() > 0);
    c.rel_l2_error = 0.0;
  } else {
    e = e.to(at::kDouble);
    a = a.to(at::kDouble);
    at::Tensor e_fin = e.isfinite(), a_fin = a.isfinite();
    at::Tensor both = e_fin.logical_and(a_fin);
    at::Tensor diff = at::where(both, (a - e).abs(), at::zeros_like(e));
    at::Tensor close = diff.le(tol.atol + tol.rtol * at::where(both, e.abs(), at::zeros_like(e)));
    // Non-finite: NaN must meet NaN, Inf must meet the same Inf.
    at::Tensor nonfinite_ok = e.isnan().logical_and(a.isnan()).logical_or(
        e.isinf().logical_and(a.eq(e)));
    bad = at::where(both, close.logical_not(), nonfinite_ok.logical_not());
    c.max_abs_error = diff.max().item<double>();
    double e_norm = at::where(both, e, at::zeros_like(e)).norm().item<double>();
    double d_norm = diff.norm().item<double>();
    c.rel_l2_error = e_norm > 0 ? d_norm / e_norm : -1.0;
  }
  c.mismatches = bad.sum().item<int64_t>();
  if (c.mismatches > 0) {
    int64_t flat = bad.flatten().nonzero().select(1, 0)[0].item<int64_t>();
    c.first_bad_index = unravel(flat, e.sizes());
    c.expected_value = e.flatten()[flat].to(at::kDouble).item<double>();
    c.actual_value = a.flatten()[flat].to(at::kDouble).item<double>();
    c.reason = fmt::format(
        "{} of {} elements differ; first at {}: expected {:.6g}, got {:.6g} (max abs error {:.3g}, "
        "tolerance atol={:g} rtol={:g})",
        c.mismatches, c.numel, fmt_index(c.first_bad_index), c.expected_value, c.actual_value,
        c.max_abs_error, tol.atol, tol.rtol);
    return c;
  }
  if (tol.use_rel_l2 && c.rel_l2_error > tol.rel_l2) {
    c.reason = fmt::format(
        "relative L2 error {:.3g} exceeds {:g} although every element is within atol={:g} rtol={:g} "
        "(an answer this far off only passes elementwise because the reference values are tiny)",
        c.rel_l2_error, tol.rel_l2, tol.atol, tol.rtol);
    return c;
  }
  c.passed = true;
  return c;
}

bool same_values(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.numel() == 0) return true;
  at::Tensor bb = b.to(a.device());
  if (at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type()))
    return at::equal(a.isnan(), bb.isnan()) && at::where(a.isnan(), at::zeros_like(a), a)
                                                   .equal(at::where(bb.isnan(), at::zeros_like(bb), bb));
  return a.equal(bb);
}

}  // namespace kbv
