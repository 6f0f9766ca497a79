# Honest CUDA solution: a block-wide scan per row: segment sums, a two-level shuffle scan of the
# segment totals, then each segment rescanned from its prefix.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
// One block (1024 threads) per row: each thread sums a contiguous segment, the block scans the
// segment totals (warp shuffles, then the warp totals), and each thread rescans its segment from
// its exclusive prefix.
__global__ void cumsum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t len) {
    __shared__ float warp_totals[32];
    const float* xr = x + blockIdx.x * len;
    float* yr = y + blockIdx.x * len;
    const int64_t seg = (len + blockDim.x - 1) / blockDim.x;
    const int64_t begin = threadIdx.x * seg, end = min(begin + seg, len);
    float local = 0.0f;
    for (int64_t i = begin; i < end; ++i) local += xr[i];
    // inclusive scan of `local` over the block
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float incl = local;
    for (int o = 1; o < 32; o <<= 1) {
        const float v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
    }
    if (lane == 31) warp_totals[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        float w = lane < (int)(blockDim.x / 32) ? warp_totals[lane] : 0.0f;
        for (int o = 1; o < 32; o <<= 1) {
            const float v = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += v;
        }
        warp_totals[lane] = w;  // inclusive prefix of the warp totals
    }
    __syncthreads();
    float running = incl - local + (warp > 0 ? warp_totals[warp - 1] : 0.0f);  // exclusive prefix
    for (int64_t i = begin; i < end; ++i) {
        running += xr[i];
        yr[i] = running;
    }
}

torch::Tensor cumsum_cuda(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "float32 CUDA tensor expected");
    TORCH_CHECK(x.dim() == 2 && (dim == 1 || dim == -1), "this kernel scans the last dimension of a 2-D tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() == 0) return y;
    cumsum_rows_kernel<<<(unsigned)xc.size(0), 1024, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), xc.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor cumsum_cuda(torch::Tensor x, int64_t dim);
"""

ext = load_inline(
    name="kbv_ex_l1_130_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["cumsum_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return ext.cumsum_cuda(x, self.dim)
