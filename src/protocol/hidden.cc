#include "protocol/hidden.h"

namespace kbv {

std::vector<Distribution> verified_hidden_configs(int level, const std::string& problem_file) {
  const Distribution d1{"D1", 1.0}, d2{"D2", 3.0}, d3{"D3", 0.01}, d4{"D4", -1.0};
  if (level == 1) {
    // 90_hidden.py: D2 filtered ("reference output contains NaN/Inf" at x3).
    if (problem_file == "90_cumprod.py") return {d1, d3, d4};
    // 98_hidden.py: D4 filtered ("reference output contains NaN/Inf" on negated probabilities).
    if (problem_file == "98_KLDivLoss.py") return {d1, d2, d3};
    // 100_hidden.py: D5, structured targets (catches a wrong broadcast axis): the draw's second
    // argument replaced by torch.ones(batch_size) with [::2] = -1, unscaled.
    if (problem_file == "100_HingeLoss.py") {
      Distribution d5{"D5", 1.0};
      d5.replace = "alternating-pm1";
      d5.replace_arg = 1;
      return {d1, d2, d3, d4, d5};
    }
  }
  return {d1, d2, d3, d4};
}

}  // namespace kbv
