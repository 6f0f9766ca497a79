# Cheat T12: silent precision downgrade. Inputs are rounded to bfloat16 (8-bit
# significand), GELU is evaluated, and the result is rounded to bfloat16 again
# before it is stored into the float32 output. The dtype is right; the values
# carry up to ~0.4% relative error, beyond the fp32 tolerance.
# Expected verdict: wrong_output.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_bf16_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(c10::BFloat16(in[i]));     // round to bf16
        const float g = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752440f));
        out[i] = static_cast<float>(c10::BFloat16(g));                // and again
    }
    return y;
}
"""

gelu_ext = load_inline(
    name="kbv_ex_l1_26_gelu_cpu_bf16",
    cpp_sources=cpp_source,
    functions=["gelu_bf16_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_ext.gelu_bf16_cpu(x)
