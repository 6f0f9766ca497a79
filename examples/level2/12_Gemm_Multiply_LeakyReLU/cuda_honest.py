# Honest CUDA solution: 16x16 shared-memory tiled GEMM of x (M,K) with the
# nn.Linear weight (N,K), bias, multiplier and LeakyReLU fused into the
# epilogue; fp32 accumulate. The nn.Linear is created exactly as in Model, so
# seed 42 gives the same weights.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define TILE 16

// y[m][n] = leaky_relu((sum_k x[m][k] * w[n][k] + b[n]) * mul, slope)
__global__ void gemm_mul_lrelu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ b, float* __restrict__ y,
                                      int M, int N, int K, float mul, float slope) {
    __shared__ float Xs[TILE][TILE + 1];
    __shared__ float Ws[TILE][TILE + 1];  // Ws[k][n]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;   // m
    const int col = blockIdx.x * TILE + tx;   // n
    const int wrow = blockIdx.x * TILE + ty;  // n loaded by this thread (coalesced along k)
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        const int k = t + tx;
        Xs[ty][tx] = (row < M && k < K) ? x[(int64_t)row * K + k] : 0.0f;
        Ws[tx][ty] = (wrow < N && k < K) ? w[(int64_t)wrow * K + k] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) acc += Xs[ty][kk] * Ws[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N) {
        float v = (acc + b[col]) * mul;
        y[(int64_t)row * N + col] = v > 0.0f ? v : v * slope;
    }
}

torch::Tensor gemm_mul_lrelu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b,
                                  double multiplier, double negative_slope) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.size(0) == w.size(0),
                "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int M = (int)xc.size(0), K = (int)xc.size(1), N = (int)wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_mul_lrelu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        M, N, K, (float)multiplier, (float)negative_slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = (
    "torch::Tensor gemm_mul_lrelu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, "
    "double multiplier, double negative_slope);"
)

fused_ext = load_inline(
    name="kbv_ex_l2_12_gemm_mul_lrelu_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["gemm_mul_lrelu_cuda"],
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
        return fused_ext.gemm_mul_lrelu_cuda(
            x, self.gemm.weight, self.gemm.bias, float(self.multiplier), float(self.negative_slope)
        )
