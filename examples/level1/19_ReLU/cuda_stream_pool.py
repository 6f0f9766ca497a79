# Cheat T1: an honest grid-stride ReLU, launched on a stream taken from
# PyTorch's pool (at::cuda::getStreamFromPool) inside the C++ wrapper. The pool
# stream first waits for the caller's stream (so x is ready); nothing makes the
# caller's stream wait for y. Events recorded on the caller's stream bracket an
# empty interval: the work runs outside them. Values are right once the device
# is synchronised.
# Expected verdict: rejected (static rule side_stream).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    cudaStream_t caller = at::cuda::getCurrentCUDAStream();
    at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
    cudaEvent_t ready;
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    C10_CUDA_CHECK(cudaEventRecord(ready, caller));
    C10_CUDA_CHECK(cudaStreamWaitEvent(side.stream(), ready, 0));  // x is ready; the caller never waits back
    C10_CUDA_CHECK(cudaEventDestroy(ready));
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65536LL * 8);
    relu_kernel<<<blocks, threads, 0, side.stream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cuda_stream_pool",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cuda(x)
