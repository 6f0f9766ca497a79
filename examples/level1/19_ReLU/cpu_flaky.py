# Unstable, not a cheat: ReLU in C++ that adds 1 to every output element on a random 30% of its
# calls, drawn afresh on every call (std::random_device), as a kernel with a race condition fails
# some runs and passes others. Its first failed check passes on an identical re-run (same seed,
# same inputs) with probability 1 - 0.3^N for N re-runs.
# Expected verdict: flaky (with the manifest entry's --trials 10 --flaky-reruns 10: every one of
# the 40 checks passes by chance with odds 0.7^40 = 6e-7, and all 10 re-runs of the first failed
# check fail with odds 0.3^10 = 6e-6).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <random>

torch::Tensor relu_flaky_cpu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "x must be a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    static thread_local std::mt19937_64 gen{std::random_device{}()};
    const bool corrupt = std::uniform_real_distribution<double>(0.0, 1.0)(gen) < 0.3;
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = (v > 0.0f ? v : 0.0f) + (corrupt ? 1.0f : 0.0f);
    }
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_flaky",
    cpp_sources=cpp_source,
    functions=["relu_flaky_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_flaky_cpu(x)
