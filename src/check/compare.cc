#include "check/compare.h"

#include <algorithm>
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

Comparison compare_tensors(const at::Tensor& expected_in, const at::Tensor& actual_in, const Tolerance& tol,
                           int64_t chunk) {
  chunk = std::max<int64_t>(chunk, 1);
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
  // In chunks: the float64 temporaries of a whole multi-GiB output would take several times its
  // size (an H200 ran out of memory comparing a 6 GiB ReLU output).
  at::Tensor e = expected_in.detach().reshape(-1);
  at::Tensor a = actual_in.detach().to(e.device()).reshape(-1);
  const bool floating = at::isFloatingType(e.scalar_type()) || at::isComplexType(e.scalar_type());
  const bool integral = at::isIntegralType(e.scalar_type(), /*includeBool=*/false);
  double e_norm_sq = 0, d_norm_sq = 0;
  int64_t first_bad = -1;
  for (int64_t offset = 0; offset < c.numel; offset += chunk) {
    const int64_t n = std::min(chunk, c.numel - offset);
    at::Tensor ec = e.narrow(0, offset, n), ac = a.narrow(0, offset, n);
    at::Tensor bad;
    if (!floating) {
      bad = ac.ne(ec);
      double m = integral ? (ac.to(at::kDouble) - ec.to(at::kDouble)).abs().max().item<double>()
                          : static_cast<double>(bad.any().item<bool>());
      c.max_abs_error = std::max(c.max_abs_error, m);
    } else {
      ec = ec.to(at::kDouble);
      ac = ac.to(at::kDouble);
      at::Tensor both = ec.isfinite().logical_and(ac.isfinite());
      at::Tensor diff = (ac - ec).abs().masked_fill_(both.logical_not(), 0.0);
      at::Tensor bound = ec.abs().masked_fill_(both.logical_not(), 0.0).mul_(tol.rtol).add_(tol.atol);
      at::Tensor close = diff.le(bound);
      bound.reset();
      // Non-finite: NaN must meet NaN, Inf must meet the same Inf.
      at::Tensor nonfinite_ok = ec.isnan().logical_and(ac.isnan()).logical_or(ec.isinf().logical_and(ac.eq(ec)));
      bad = at::where(both, close.logical_not(), nonfinite_ok.logical_not());
      c.max_abs_error = std::max(c.max_abs_error, diff.max().item<double>());
      d_norm_sq += diff.square().sum().item<double>();
      e_norm_sq += ec.masked_fill(both.logical_not(), 0.0).square().sum().item<double>();
    }
    int64_t chunk_bad = bad.sum().item<int64_t>();
    if (chunk_bad > 0 && first_bad < 0) first_bad = offset + bad.nonzero().select(1, 0)[0].item<int64_t>();
    c.mismatches += chunk_bad;
  }
  if (floating) c.rel_l2_error = e_norm_sq > 0 ? std::sqrt(d_norm_sq) / std::sqrt(e_norm_sq) : -1.0;
  if (c.mismatches > 0) {
    int64_t flat = first_bad;
    c.first_bad_index = unravel(flat, expected_in.sizes());
    c.expected_value = e[flat].to(at::kDouble).item<double>();
    c.actual_value = a[flat].to(at::kDouble).item<double>();
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

ValueStats finite_stats(const at::Tensor& t_in, int64_t chunk) {
  chunk = std::max<int64_t>(chunk, 1);
  ValueStats s;
  at::Tensor t = t_in.detach().reshape(-1);
  const bool floating = at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type());
  double m2 = 0;  // sum of squared deviations, merged chunk by chunk (Chan et al.)
  for (int64_t offset = 0; offset < t.numel(); offset += chunk) {
    at::Tensor c = t.narrow(0, offset, std::min(chunk, t.numel() - offset)).to(at::kDouble);
    if (floating) c = c.masked_select(c.isfinite());
    const int64_t n = c.numel();
    if (n == 0) continue;
    const double mean = c.mean().item<double>();
    const double chunk_m2 = (c - mean).square().sum().item<double>();
    s.max_abs = std::max(s.max_abs, c.abs().max().item<double>());
    const double total = static_cast<double>(s.count + n);
    const double delta = mean - s.mean;
    m2 += chunk_m2 + delta * delta * static_cast<double>(s.count) * static_cast<double>(n) / total;
    s.mean += delta * static_cast<double>(n) / total;
    s.count += n;
  }
  s.std = s.count > 1 ? std::sqrt(m2 / static_cast<double>(s.count - 1)) : 0.0;
  return s;
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
