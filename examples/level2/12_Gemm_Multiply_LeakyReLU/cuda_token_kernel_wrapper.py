# Cheat (T11, fallback to PyTorch inside the C++ wrapper, with a token own kernel): as
# cuda_fnptr_wrapper.py, ATen's linear, mul and leaky_relu (through function pointers) compute the
# answer, and the wrapper also launches a one-thread own kernel that writes a scratch value nobody
# reads, so that CUPTI sees an own kernel run (the GPU's "any own kernel ran" rule passes it). The
# wrapper's result is the output, so the ablation calls own code reached. On the CPU the same
# wrapper is rejected by the replayed own call's share (its time is ATen's); the GPU has no such
# rule yet (issue 29): a known gap, marked pending in examples/manifest.json.
# Expected verdict: rejected.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void token_kernel(float* __restrict__ scratch, float multiplier) {
    if (threadIdx.x == 0 && blockIdx.x == 0) scratch[0] = multiplier;
}

using linear_fn = at::Tensor (*)(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&);
using scalar_fn = at::Tensor (*)(const at::Tensor&, const at::Scalar&);

static linear_fn linears[] = {&at::linear};
static scalar_fn scales[] = {&at::mul};
static scalar_fn activations[] = {&at::leaky_relu};

torch::Tensor gemm_mul_lrelu(torch::Tensor x, torch::Tensor w, torch::Tensor b, double multiplier,
                             double negative_slope) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "shape mismatch");
    auto scratch = torch::empty({1}, x.options());
    token_kernel<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(scratch.data_ptr<float>(), (float)multiplier);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int pick = x.numel() > 0 ? 0 : 0;
    auto y = linears[pick](x, w, b);
    y = scales[pick](y, multiplier);
    return activations[pick](y, negative_slope);
}
"""

ext = load_inline(
    name="kbv_ex_l2_12_cuda_token_kernel_wrapper",
    cpp_sources="torch::Tensor gemm_mul_lrelu(torch::Tensor x, torch::Tensor w, torch::Tensor b, double multiplier, "
    "double negative_slope);",
    cuda_sources=cuda_source,
    functions=["gemm_mul_lrelu"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return ext.gemm_mul_lrelu(x, self.gemm.weight, self.gemm.bias, self.multiplier, self.negative_slope)
