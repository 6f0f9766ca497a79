# Candidate for bench/problems/level1/2_Dependent_loads.py (test TimingGpu.L2FlushMakesACachedInputSlower):
# one thread visits the 4096 positions in order, each address depending on the value loaded
# before it (v * 0.0f is 0 for the finite inputs but cannot be folded away), so the loads cannot
# overlap and the call's time is 4096 memory latencies.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void chase_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n, int steps,
                             int64_t stride) {
    int64_t i = 0;
    float acc = 0.0f;
    for (int s = 0; s < steps; ++s) {
        const float v = __ldcg(x + i);  // cached in L2 only: every visit is a new line anyway
        acc += v;
        i = (i + stride + (int64_t)(v * 0.0f)) % n;
    }
    out[0] = acc;
}

torch::Tensor chase_cuda(torch::Tensor x, int64_t steps, int64_t stride) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto out = torch::empty({1}, xc.options());
    chase_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), out.data_ptr<float>(),
                                                                 xc.numel(), (int)steps, stride);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

cpp_source = "torch::Tensor chase_cuda(torch::Tensor x, int64_t steps, int64_t stride);"

chase_ext = load_inline(
    name="kbv_test_dependent_loads",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["chase_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return chase_ext.chase_cuda(x, 4096, 32 * 2053)
