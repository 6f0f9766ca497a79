#include "lint/ops.h"

#include <set>
#include <string>

namespace kbv {

bool is_compute_method(std::string_view name) {
  static const std::set<std::string, std::less<>> ops = {
      "relu",      "relu_",      "sigmoid",    "sigmoid_",    "tanh",        "tanh_",      "exp",        "exp_",
      "log",       "log_",       "sum",        "mean",        "max",         "min",        "amax",       "amin",
      "softmax",   "log_softmax", "matmul",    "mm",          "bmm",         "addmm",      "addmm_",     "baddbmm",
      "add",       "add_",       "sub",        "sub_",        "mul",         "mul_",       "div",        "div_",
      "pow",       "pow_",       "sqrt",       "sqrt_",       "rsqrt",       "abs",        "abs_",       "neg",
      "neg_",      "clamp",      "clamp_",     "clamp_min",   "clamp_min_",  "clamp_max",  "clamp_max_", "where",
      "gelu",      "silu",       "sin",        "cos",         "erf",         "erf_",       "norm",       "prod",
      "cumsum",    "cumprod",    "argmax",     "argmin",      "sort",        "topk",       "masked_fill", "masked_fill_",
      "index_select", "gather",  "scatter",    "scatter_",    "scatter_add", "scatter_add_", "lt",       "gt",
      "le",        "ge",         "eq",         "ne",          "logsumexp",   "leaky_relu", "hardtanh",   "elu",
      "softplus",  "dot",        "expm1",      "log1p",       "reciprocal",  "square",     "var",        "std",
      "tril",      "triu",       "outer",      "lerp",        "floor",       "ceil",       "round",      "sign",
      "maximum",   "minimum",    "fmod",       "remainder",   "flip",        "roll",       "nansum",     "addcmul",
      "addcdiv",   "mish",       "hardswish",  "hardsigmoid", "index_add",   "index_add_", "mv",         "addmv",
      "median",    "var_mean",   "std_mean",   "atan2",       "hypot",       "sinh",       "cosh",       "tan",
      "log2",      "log10",      "exp2",       "trunc",       "sgn",         "threshold",  "glu",        "selu",
      "celu",      "softmin",    "conv1d",     "conv2d",      "conv3d",      "linear",     "forward",    "cross",
      "kron",      "einsum",     "cdist",      "frac",        "true_divide", "floor_divide", "rsub",     "xlogy"};
  return ops.count(name) > 0;
}

}  // namespace kbv
