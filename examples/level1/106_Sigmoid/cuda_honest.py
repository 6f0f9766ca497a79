# Honest CUDA solution: grid-stride elementwise sigmoid with float4 loads and stores when the
# pointers are 16-byte aligned (scalar tail and fallback), on the current stream.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ float sigmoidf(float v) { return 1.0f / (1.0f + expf(-v)); }

__global__ void sigmoid_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = sigmoidf(v.x);
        v.y = sigmoidf(v.y);
        v.z = sigmoidf(v.z);
        v.w = sigmoidf(v.w);
        y[i] = v;
    }
}

__global__ void sigmoid_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
    for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = sigmoidf(x[i]);
}

torch::Tensor sigmoid_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "float32 CUDA tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    auto stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
    const int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        const int blocks = (int)std::min<int64_t>((n4 + threads - 1) / threads, 65535);
        sigmoid_vec4_kernel<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                                           reinterpret_cast<float4*>(out), n4);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (n4 * 4 < n) {
        const int blocks = (int)std::min<int64_t>((n - n4 * 4 + threads - 1) / threads, 65535);
        sigmoid_kernel<<<blocks, threads, 0, stream>>>(in, out, n4 * 4, n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

cpp_source = """
torch::Tensor sigmoid_cuda(torch::Tensor x);
"""

ext = load_inline(
    name="kbv_ex_l1_106_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["sigmoid_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.sigmoid_cuda(x)
