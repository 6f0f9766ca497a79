# Honest CUDA solution: a thread per output element scanning its window with explicit bounds;
# padded positions never win.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
__global__ void max_pool2d_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t NC, int64_t H,
                                  int64_t W, int64_t OH, int64_t OW, int k, int s, int p) {
    const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= NC * OH * OW) return;
    const int64_t ow = t % OW, oh = (t / OW) % OH, nc = t / (OW * OH);
    const float* plane = x + nc * H * W;
    float m = -INFINITY;
    for (int i = 0; i < k; ++i) {
        const int64_t ih = oh * s - p + i;
        if (ih < 0 || ih >= H) continue;
        for (int j = 0; j < k; ++j) {
            const int64_t iw = ow * s - p + j;
            if (iw >= 0 && iw < W) m = fmaxf(m, plane[ih * W + iw]);
        }
    }
    y[t] = m;
}

torch::Tensor max_pool2d_cuda(torch::Tensor x, int64_t k, int64_t s, int64_t p) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "float32 CUDA NCHW tensor");
    auto xc = x.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
    auto y = torch::empty({N, C, OH, OW}, xc.options());
    const int64_t total = y.numel();
    if (total == 0) return y;
    max_pool2d_kernel<<<(unsigned)((total + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), N * C, H, W, OH, OW, (int)k, (int)s, (int)p);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor max_pool2d_cuda(torch::Tensor x, int64_t k, int64_t s, int64_t p);
"""

ext = load_inline(
    name="kbv_ex_l1_120_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["max_pool2d_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super(ModelNew, self).__init__()
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        return ext.max_pool2d_cuda(x, self.k, self.s, self.p)
