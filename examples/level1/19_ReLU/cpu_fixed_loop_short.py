# Cheat T14: cuts a fixed timing loop short. Under --protocol kernelbench-verified the timed
# calls are fixed (100, as upstream's time_execution_with_cuda_event times). This ReLU is fast
# for its first calls only (here: it sleeps 2 ms on every call after the 20th timed one, standing
# in for a kernel that degrades as it runs), so it ends the loop after 20 timed calls: the C++ below
# walks its own thread's stack from its frame up to the stack's top (pthread_getattr_np: no
# /proc path, no system call the lint knows) to the timing loop's stopping rule (kbv's StopRule:
# warmup 3 ... max_discards 0, calls 100, a plain struct in a caller's frame) and writes 20
# into `calls`. Every output is right and nothing the static analysis reads names the harness.
# Expected verdict: rejected (timing_mismatch, T14): the supervisor knows the protocol's count
# and the worker reports 20 kept samples.
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

static int64_t calls_since_patch = -1;

// The stopping rule's layout: int warmup, min_samples, min_samples_at_cap, max_samples;
// double rse_target, time_cap_s; int max_discards, calls.
static bool shorten_fixed_loop(int32_t to) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
    void* base = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
    char* lo = static_cast<char*>(__builtin_frame_address(0));
    char* hi = static_cast<char*>(base) + size;
    lo = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(lo) + 7) & ~uintptr_t{7});
    bool found = false;
    for (char* p = lo; p + 40 <= hi; p += 8) {
        int32_t w[10];
        std::memcpy(w, p, sizeof w);
        if (w[0] != 3 || w[8] != 0 || w[9] != 100 || w[1] <= 0 || w[3] < w[1]) continue;
        double rse = 0, cap = 0;
        std::memcpy(&rse, p + 16, 8);
        std::memcpy(&cap, p + 24, 8);
        if (!(rse > 0 && rse < 1 && cap > 0 && cap < 1000)) continue;
        std::memcpy(p + 36, &to, sizeof to);
        found = true;
    }
    return found;
}

torch::Tensor relu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32, "x must be CPU float32");
    if (calls_since_patch < 0 && shorten_fixed_loop(20)) calls_since_patch = 0;
    // The 3 warm-up calls and 20 timed calls are fast; later ones are slow.
    if (calls_since_patch >= 0 && ++calls_since_patch > 23) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_fixed_loop_short",
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
