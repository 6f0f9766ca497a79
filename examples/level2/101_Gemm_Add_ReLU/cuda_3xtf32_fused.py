# Honest CUDA solution: one fused kernel for relu(x @ W^T + bias): a tensor-core GEMM (WMMA
# m16n16k8, fp32 accumulation) with bias and ReLU in the epilogue. The weights have both signs, so
# the sum cancels: plain TF32 would leave errors of ~1e-4 (x1) to ~4e-4 (x3) near zero outputs,
# too close to atol 1e-3; 3xTF32 (high and low TF32 parts, three MMAs) keeps fp32-level accuracy
# (see manifest).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <mma.h>
#include <type_traits>

using namespace nvcuda;

// Block tile 64x64, k-step 32; 4 warps in a 2x2 grid, each a 32x32 tile of 2x2 wmma 16x16x8
// fragments. Tiles are staged through shared memory with zero fill, so any M, N, K works.
constexpr int BM = 64, BN = 64, BK = 32, PAD = 4, THREADS = 128;

// C (M, N) = A (M, K) @ B, fp32 accumulation on TF32 tensor cores.
//   B_IS_WT: B is given as W (N, K) row-major (B = W^T, as in nn.Linear), else as (K, N) row-major.
//   SPLIT:   3xTF32: each operand is split into a TF32 high part and a TF32 remainder and the
//            product is a_hi*b_hi + a_hi*b_lo + a_lo*b_hi, close to fp32 accuracy.
//   Epilogue: + bias[n] when bias is not null, then ReLU when relu.
template <bool B_IS_WT, bool SPLIT>
__global__ void __launch_bounds__(THREADS) gemm_tf32_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, const float* __restrict__ bias,
                                                            bool relu, int M, int N, int K) {
    using BLayout = typename std::conditional<B_IS_WT, wmma::col_major, wmma::row_major>::type;
    constexpr int B_ROWS = B_IS_WT ? BN : BK;
    constexpr int B_LD = B_IS_WT ? BK + PAD : BN + PAD;
    __shared__ __align__(32) float As[BM][BK + PAD];
    __shared__ __align__(32) float Bs[B_ROWS][B_LD];
    __shared__ __align__(32) float Cs[BM][BN + PAD];

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int idx = threadIdx.x; idx < BM * BK; idx += THREADS) {
            const int r = idx / BK, c = idx % BK, gm = m0 + r, gk = k0 + c;
            As[r][c] = (gm < M && gk < K) ? A[(size_t)gm * K + gk] : 0.0f;
        }
        if (B_IS_WT) {
            for (int idx = threadIdx.x; idx < BN * BK; idx += THREADS) {
                const int r = idx / BK, c = idx % BK, gn = n0 + r, gk = k0 + c;
                Bs[r][c] = (gn < N && gk < K) ? B[(size_t)gn * K + gk] : 0.0f;
            }
        } else {
            for (int idx = threadIdx.x; idx < BK * BN; idx += THREADS) {
                const int r = idx / BN, c = idx % BN, gk = k0 + r, gn = n0 + c;
                Bs[r][c] = (gk < K && gn < N) ? B[(size_t)gk * N + gn] : 0.0f;
            }
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a_hi[2], a_lo[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, BLayout> b_hi[2], b_lo[2];
            for (int i = 0; i < 2; ++i) {
                wmma::load_matrix_sync(a_hi[i], &As[wm * 32 + i * 16][kk], BK + PAD);
                for (int t = 0; t < a_hi[i].num_elements; ++t) {
                    const float v = a_hi[i].x[t], hi = wmma::__float_to_tf32(v);
                    a_hi[i].x[t] = hi;
                    if (SPLIT) a_lo[i].x[t] = wmma::__float_to_tf32(v - hi);
                }
            }
            for (int j = 0; j < 2; ++j) {
                if (B_IS_WT)
                    wmma::load_matrix_sync(b_hi[j], &Bs[wn * 32 + j * 16][kk], B_LD);
                else
                    wmma::load_matrix_sync(b_hi[j], &Bs[kk][wn * 32 + j * 16], B_LD);
                for (int t = 0; t < b_hi[j].num_elements; ++t) {
                    const float v = b_hi[j].x[t], hi = wmma::__float_to_tf32(v);
                    b_hi[j].x[t] = hi;
                    if (SPLIT) b_lo[j].x[t] = wmma::__float_to_tf32(v - hi);
                }
            }
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) {
                    if (SPLIT) {  // small terms first
                        wmma::mma_sync(acc[i][j], a_lo[i], b_hi[j], acc[i][j]);
                        wmma::mma_sync(acc[i][j], a_hi[i], b_lo[j], acc[i][j]);
                    }
                    wmma::mma_sync(acc[i][j], a_hi[i], b_hi[j], acc[i][j]);
                }
        }
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&Cs[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], BN + PAD, wmma::mem_row_major);
    __syncthreads();
    for (int idx = threadIdx.x; idx < BM * BN; idx += THREADS) {
        const int r = idx / BN, c = idx % BN, gm = m0 + r, gn = n0 + c;
        if (gm >= M || gn >= N) continue;
        float v = Cs[r][c];
        if (bias) v += bias[gn];
        if (relu) v = fmaxf(v, 0.0f);
        C[(size_t)gm * N + gn] = v;
    }
}

template <bool B_IS_WT, bool SPLIT>
static void launch_gemm(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, const float* bias,
                        bool relu, int64_t M, int64_t N, int64_t K) {
    TORCH_CHECK(M < (1LL << 31) && N < (1LL << 31) && K < (1LL << 31), "matrix too large");
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
    gemm_tf32_kernel<B_IS_WT, SPLIT><<<grid, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), bias, relu, (int)M, (int)N, (int)K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor gemm_add_relu(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                bias.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && bias.numel() == w.size(0),
                "x (M, K), W (N, K), bias (N)");
    auto a = x.contiguous(), b = w.contiguous(), bc = bias.contiguous();
    auto c = torch::empty({a.size(0), b.size(0)}, a.options());
    if (c.numel() == 0) return c;
    launch_gemm<true, true>(a, b, c, bc.data_ptr<float>(), true, a.size(0), b.size(0), a.size(1));
    return c;
}
"""

cpp_source = """
torch::Tensor gemm_add_relu(torch::Tensor x, torch::Tensor w, torch::Tensor bias);
"""

ext = load_inline(
    name="kbv_ex_l2_101_cuda_3xtf32_fused",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["gemm_add_relu"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.02)

    def forward(self, x):
        return ext.gemm_add_relu(x, self.gemm.weight, self.bias)
