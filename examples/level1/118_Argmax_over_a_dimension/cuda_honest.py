# Honest CUDA solution: argmax over one dimension, a thread per output walking its column
# (coalesced across threads for the strided default); the first index wins ties, int64 output like
# torch.argmax.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
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

__global__ void argmax_kernel(const float* __restrict__ x, int64_t* __restrict__ y, int64_t outer, int64_t red,
                              int64_t inner) {
    const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    const int64_t o = t / inner, i = t % inner;
    const float* p = x + o * red * inner + i;
    float best = p[0];
    int64_t at = 0;
    for (int64_t r = 1; r < red; ++r) {
        const float v = p[r * inner];
        if (v > best) {  // strict: ties keep the first index
            best = v;
            at = r;
        }
    }
    y[t] = at;
}

torch::Tensor argmax_dim_cuda(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "float32 CUDA tensor expected");
    auto xc = x.contiguous();
    int64_t outer, red, inner;
    std::vector<int64_t> shape;
    reduce_shape(xc, dim, outer, red, inner, shape);
    auto y = torch::empty(shape, xc.options().dtype(torch::kInt64));
    if (y.numel() == 0) return y;
    argmax_kernel<<<(unsigned)((outer * inner + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<int64_t>(), outer, red, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor argmax_dim_cuda(torch::Tensor x, int64_t dim);
"""

ext = load_inline(
    name="kbv_ex_l1_118_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["argmax_dim_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return ext.argmax_dim_cuda(x, self.dim)
