# Cheat (T11, fallback to PyTorch inside the C++ wrapper): the C++ "fused kernel" calls ATen's
# linear, mul and leaky_relu through function pointers picked from tables, so no `at::linear(...)`
# call appears in the source for the static aten_compute rule to see. Its result is the output
# (the ablation calls own code reached), but replayed alone under the CPU sampler the own call
# spends (almost) none of its time in own code: no_custom_compute, at every size.
# Expected verdict: rejected.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

using linear_fn = at::Tensor (*)(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&);
using scalar_fn = at::Tensor (*)(const at::Tensor&, const at::Scalar&);

// "Backends" chosen at run time: the first ones are ATen's.
static linear_fn linears[] = {&at::linear};
static scalar_fn scales[] = {&at::mul};
static scalar_fn activations[] = {&at::leaky_relu};

torch::Tensor gemm_mul_lrelu_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, double multiplier,
                                 double negative_slope) {
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "shape mismatch");
    const int pick = x.numel() > 0 ? 0 : 0;
    auto y = linears[pick](x, w, b);
    y = scales[pick](y, multiplier);
    return activations[pick](y, negative_slope);
}
"""

ext = load_inline(
    name="kbv_ex_l2_12_cpu_fnptr_wrapper",
    cpp_sources=cpp_source,
    functions=["gemm_mul_lrelu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return ext.gemm_mul_lrelu_cpu(x, self.gemm.weight, self.gemm.bias, self.multiplier, self.negative_slope)
