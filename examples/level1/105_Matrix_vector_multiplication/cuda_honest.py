# Honest CUDA solution: one warp per row of A; each lane accumulates a strided share of the dot
# product (float4 loads when aligned) and the warp reduces with shuffles.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__global__ void matvec_kernel(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                              int64_t M, int64_t K, bool vec4) {
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= M) return;
    const float* a = A + row * K;
    float acc = 0.0f;
    if (vec4) {
        const float4* a4 = reinterpret_cast<const float4*>(a);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        for (int64_t k = lane; k < K / 4; k += 32) {
            const float4 u = a4[k], v = x4[k];
            acc += u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
        }
    } else {
        for (int64_t k = lane; k < K; k += 32) acc += a[k] * x[k];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

torch::Tensor matvec_cuda(torch::Tensor A, torch::Tensor x) {
    TORCH_CHECK(A.is_cuda() && x.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(A.dim() == 2 && x.dim() == 2 && x.size(1) == 1 && A.size(1) == x.size(0), "A (M, K), x (K, 1)");
    auto a = A.contiguous(), xc = x.contiguous();
    const int64_t M = a.size(0), K = a.size(1);
    auto y = torch::empty({M, 1}, a.options());
    if (M == 0) return y;
    const bool vec4 = K % 4 == 0 && reinterpret_cast<uintptr_t>(a.data_ptr<float>()) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0;
    const int rows_per_block = 8;
    matvec_kernel<<<(unsigned)((M + rows_per_block - 1) / rows_per_block), rows_per_block * 32, 0,
                    at::cuda::getCurrentCUDAStream()>>>(a.data_ptr<float>(), xc.data_ptr<float>(), y.data_ptr<float>(),
                                                        M, K, vec4);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor matvec_cuda(torch::Tensor A, torch::Tensor x);
"""

ext = load_inline(
    name="kbv_ex_l1_105_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["matvec_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, x):
        return ext.matvec_cuda(A, x)
