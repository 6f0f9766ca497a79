// Output comparison: the reference worker's judgement of a candidate's output.
// fp32 default (KernelBench-Verified): |a-e| <= atol + rtol*|e| elementwise, and relative L2
// error ||a-e|| / ||e|| <= rel_l2 so that an all-zero answer to a tiny-valued reference fails.
// NaN and Inf pass only where the reference has them (same sign for Inf).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace kbv {

struct Tolerance {
  double atol = 1e-3;
  double rtol = 1e-3;
  double rel_l2 = 1e-3;
  bool use_rel_l2 = true;  // false: plain allclose (the kernelbench legacy protocol)
};

struct Comparison {
  bool passed = false;
  std::string reason;              // empty when passed; else one sentence for a user
  int64_t numel = 0;
  int64_t mismatches = 0;          // elements outside the elementwise tolerance
  double max_abs_error = 0.0;      // over elements finite in both
  double rel_l2_error = 0.0;       // -1 when the reference's L2 norm is 0 (criterion not applicable)
  std::vector<int64_t> first_bad_index;  // multi-index of the first failing element
  double expected_value = 0.0;     // at first_bad_index
  double actual_value = 0.0;
  nlohmann::json to_json() const;
};

// Compared `chunk` elements at a time (float64 temporaries of about 8 x chunk bytes each, so the
// memory a comparison needs does not grow with the output); the result does not depend on it.
Comparison compare_tensors(const at::Tensor& expected, const at::Tensor& actual, const Tolerance& tolerance,
                           int64_t chunk = int64_t{1} << 24);

// Count, mean, standard deviation (n-1) and largest magnitude of the finite values of a tensor
// (all of them for integer and bool tensors), in float64, `chunk` elements at a time.
struct ValueStats {
  int64_t count = 0;
  double mean = 0.0;
  double std = 0.0;
  double max_abs = 0.0;
};
ValueStats finite_stats(const at::Tensor& t, int64_t chunk = int64_t{1} << 24);

// Bitwise-equal values (NaN equal to NaN), same shape and dtype: for "inputs unchanged".
bool same_values(const at::Tensor& a, const at::Tensor& b);

std::string shape_string(at::IntArrayRef sizes);

}  // namespace kbv
