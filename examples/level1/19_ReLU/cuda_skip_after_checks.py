# Cheat T23 on the GPU: computes only while it believes it is watched. The timing loop is
# recognisable from inside (the same input buffer call after call, a flush and a draw between
# calls); once such a streak is past the warm-up and the first 4 timed calls (earlier versions of
# kbv spot-checked the first 64; paired rounds time blocks of 5 or more), forward launches
# nothing and returns torch::empty_like(x) (the previous output's
# freed block: stale values). The first 7 calls of the streak sleep a random 0-0.4 ms on the host
# so that the noise stopping rule does not end the sampling early.
# Expected verdict: rejected (spot_check_failed over every timed call; impossible_speed too, as
# a call that launches nothing is below the floor). GPU host only (scripts/gpu/check.sh attacks).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

static const void* last_ptr = nullptr;
static std::chrono::steady_clock::time_point last_return;
static int streak = 0;
static std::mt19937 noise(12345);

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    const auto now = std::chrono::steady_clock::now();
    const double idle_ms = std::chrono::duration<double, std::milli>(now - last_return).count();
    streak = (x.data_ptr() == last_ptr && idle_ms > 1.0) ? streak + 1 : 0;
    last_ptr = x.data_ptr();
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0 || streak > 3 + 4) {
        last_return = std::chrono::steady_clock::now();
        return y;
    }
    if (streak > 0) std::this_thread::sleep_for(std::chrono::microseconds(noise() % 400));
    const int threads = 256;
    const int64_t want = (n + threads - 1) / threads;
    const int blocks = (int)std::min<int64_t>(want, 65536LL * 8);
    relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    last_return = std::chrono::steady_clock::now();
    return y;
}
"""

cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cuda_skip_after_checks",
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
