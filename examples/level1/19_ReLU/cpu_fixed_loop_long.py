# Cheat T14: pads a fixed timing loop. Under --protocol kernelbench-verified the timed calls are
# fixed (100) and the statistic is their mean, so a slow first timed call (here: 20 ms of one-off
# "tuning" on the first call after the 3 warm-up calls) weighs 1/100 of the mean. This ReLU
# averages it away by running the loop 20 times longer: on its first call it looks through its
# thread's stack, above its own frame, for the timing loop's stopping rule (a plain struct
# {int warmup=3, min_samples, min_samples_at_cap, max_samples; double rse_target, time_cap_s;
# int max_discards=0, calls=100} in a caller's frame) and sets `calls` to 2000. No /proc path
# and no system call the lint knows: the stack's bounds come from pthread_getattr_np.
# Expected verdict: rejected (timing_mismatch, T14): the supervisor knows the protocol's count
# and the worker reports 2000 kept samples.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <pthread.h>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

static int timed_call = -1;  // counts calls from the one that found the stopping rule

static int32_t* fixed_calls_field() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return nullptr;
    void* stack = nullptr;
    size_t bytes = 0;
    pthread_attr_getstack(&attr, &stack, &bytes);
    pthread_attr_destroy(&attr);
    uintptr_t at = (reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) + 7) & ~uintptr_t{7};
    const uintptr_t top = reinterpret_cast<uintptr_t>(stack) + bytes;
    for (; at + 40 <= top; at += 8) {
        const int32_t* rule = reinterpret_cast<const int32_t*>(at);
        double target = 0, cap_s = 0;
        std::memcpy(&target, reinterpret_cast<const char*>(at) + 16, sizeof target);
        std::memcpy(&cap_s, reinterpret_cast<const char*>(at) + 24, sizeof cap_s);
        if (rule[0] == 3 && rule[8] == 0 && rule[9] == 100 && rule[1] > 0 && rule[3] >= rule[1] &&
            target > 0 && target < 1 && cap_s > 0 && cap_s < 1000)
            return reinterpret_cast<int32_t*>(at + 36);
    }
    return nullptr;
}

torch::Tensor relu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32, "x must be CPU float32");
    if (timed_call < 0) {
        if (int32_t* calls = fixed_calls_field()) {
            *calls = 2000;
            timed_call = 0;
        }
    }
    if (timed_call >= 0 && timed_call++ == 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    torch::Tensor y = torch::empty_like(x);
    const torch::Tensor xc = x.contiguous();
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] < 0.0f ? 0.0f : src[i];
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_fixed_loop_long",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
