# Honest CUDA solution for --precision bf16 (and fp16, fp32): a 16x16 shared-memory tiled matmul
# templated on the element type (AT_DISPATCH over float, half, bfloat16); tiles are loaded as the
# input type, products accumulate in float32, each output is rounded once to the input type.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define TILE 16

template <typename scalar_t>
__global__ void matmul_tiled_kernel(const scalar_t* __restrict__ A, const scalar_t* __restrict__ B,
                                    scalar_t* __restrict__ C, int M, int K, int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        const int ak = t + tx;
        const int bk = t + ty;
        As[ty][tx] = (row < M && ak < K) ? static_cast<float>(A[(int64_t)row * K + ak]) : 0.0f;
        Bs[ty][tx] = (bk < K && col < N) ? static_cast<float>(B[(int64_t)bk * N + col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(int64_t)row * N + col] = static_cast<scalar_t>(acc);
}

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda(), "A and B must be CUDA tensors");
    TORCH_CHECK(A.scalar_type() == B.scalar_type(), "A and B must have the same dtype");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int M = (int)a.size(0), K = (int)a.size(1), N = (int)b.size(1);
    auto C = torch::empty({M, N}, a.options());
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "matmul_cuda", [&] {
        matmul_tiled_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), C.data_ptr<scalar_t>(), M, K, N);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return C;
}
"""

cpp_source = "torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cuda_bf16",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["matmul_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_cuda(A, B)
