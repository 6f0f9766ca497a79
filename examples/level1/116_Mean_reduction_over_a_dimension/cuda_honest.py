# Honest CUDA solution: mean over one dimension; a contiguous reduced dimension gets one block per
# output with a shuffle and shared-memory block reduction, a strided one a thread per output
# walking the column (coalesced across threads).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v) {
    __shared__ float warp_sums[32];
    __shared__ float total;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) total = v;
    }
    __syncthreads();
    const float result = total;
    __syncthreads();  // total and warp_sums may be reused by the next call
    return result;
}

#include <vector>

// x viewed as (outer, red, inner); the output drops the reduced dimension.
static void reduce_shape(const torch::Tensor& x, int64_t& dim, int64_t& outer, int64_t& red, int64_t& inner,
                         std::vector<int64_t>& out_shape) {
    const int64_t nd = x.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    outer = 1;
    inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= x.size(d);
    red = x.size(dim);
    TORCH_CHECK(red > 0, "empty reduction");
    for (int64_t d = 0; d < nd; ++d)
        if (d != dim) out_shape.push_back(x.size(d));
}

__global__ void mean_contiguous_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t red) {
    const float* row = x + blockIdx.x * red;
    float acc = 0.0f;
    for (int64_t r = threadIdx.x; r < red; r += blockDim.x) acc += row[r];
    acc = block_sum(acc);
    if (threadIdx.x == 0) y[blockIdx.x] = acc / (float)red;
}

__global__ void mean_strided_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t outer, int64_t red,
                                    int64_t inner) {
    const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    const int64_t o = t / inner, i = t % inner;
    const float* p = x + o * red * inner + i;
    float acc = 0.0f;
    for (int64_t r = 0; r < red; ++r) acc += p[r * inner];
    y[t] = acc / (float)red;
}

torch::Tensor mean_dim_cuda(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "float32 CUDA tensor expected");
    auto xc = x.contiguous();
    int64_t outer, red, inner;
    std::vector<int64_t> shape;
    reduce_shape(xc, dim, outer, red, inner, shape);
    auto y = torch::empty(shape, xc.options());
    if (y.numel() == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (inner == 1) {
        TORCH_CHECK(outer < (1LL << 31), "too many rows");
        mean_contiguous_kernel<<<(unsigned)outer, 256, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), red);
    } else {
        mean_strided_kernel<<<(unsigned)((outer * inner + 255) / 256), 256, 0, stream>>>(
            xc.data_ptr<float>(), y.data_ptr<float>(), outer, red, inner);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor mean_dim_cuda(torch::Tensor x, int64_t dim);
"""

ext = load_inline(
    name="kbv_ex_l1_116_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["mean_dim_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_dim_cuda(x, self.dim)
