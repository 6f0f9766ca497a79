# Cheat (T11, fallback to PyTorch inside the C++ wrapper), the CUDA twin of cpu_fnptr_wrapper.py:
# the "fused kernel" entry point calls ATen's linear, mul and leaky_relu through function pointers
# picked from tables, so no `at::linear(...)` call appears in the source for the static
# aten_compute rule to see. The extension holds an own CUDA kernel, but the dispatch never picks
# it: every kernel of the call is launched from ATen/cuBLAS. Its result is the output (the
# ablation calls own code reached); CUPTI sees no own kernel run: no_custom_compute.
# Expected verdict: rejected.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void scale_leaky_kernel(float* __restrict__ y, int64_t n, float multiplier, float slope) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = y[i] * multiplier;
        y[i] = v > 0.0f ? v : v * slope;
    }
}

using linear_fn = at::Tensor (*)(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&);
using scalar_fn = at::Tensor (*)(const at::Tensor&, const at::Scalar&);

// "Backends" chosen at run time: the first ones are ATen's (the own kernel is the second, never picked).
static linear_fn linears[] = {&at::linear};
static scalar_fn scales[] = {&at::mul};
static scalar_fn activations[] = {&at::leaky_relu};

torch::Tensor gemm_mul_lrelu(torch::Tensor x, torch::Tensor w, torch::Tensor b, double multiplier,
                             double negative_slope) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "shape mismatch");
    const int pick = x.numel() > 0 ? 0 : 1;
    if (pick == 1) {  // never: an empty batch
        auto y = torch::empty({0, w.size(0)}, x.options());
        scale_leaky_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(), 0,
                                                                        (float)multiplier, (float)negative_slope);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return y;
    }
    auto y = linears[pick](x, w, b);
    y = scales[pick](y, multiplier);
    return activations[pick](y, negative_slope);
}
"""

ext = load_inline(
    name="kbv_ex_l2_12_cuda_fnptr_wrapper",
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
