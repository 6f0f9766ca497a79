# Cheat T17: slows the baseline from a live candidate. Under paired timing the candidate's worker
# stays alive between its blocks while the baselines are timed, so this ReLU (an honest C++ loop)
# starts one spinning thread per core on its first call. The threads sleep while its own calls come
# back to back and spin flat out once no call has come for 50 ms, which is when someone else is
# being timed (a shorter gap also fires in its own block on a busy host, where the spinning then
# stretches the supervisor's windows around its calls and the call bound rejects it, T22): the baselines' blocks would run on a loaded machine (ATen's intra-op threads wait
# for a busy core), and the speedup would be inflated many times over.
# Expected verdict: rejected under the default strict policy (the static threads rule, T2: a
# detached thread), and correct under --policy lenient, where the runtime defence is what decides.
# That defence is not a rejection: while a baseline block runs, kbv stops
# the candidate's worker and everything it started (SIGSTOP to its process group, descendants and
# strays; docs/TIMING.md, "Paired rounds"), so the spinners never run beside a baseline and the
# speedup is the honest loop's (tests/e2e/timing_test.cc, Timing.ASpinnerBetweenCallsDoesNotInflate).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

static std::atomic<bool> g_in_call{false};
static std::atomic<int64_t> g_last_end_ns{0};

static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void spin() {
    volatile uint64_t sink = 0;
    for (;;) {
        if (!g_in_call.load() && now_ns() - g_last_end_ns.load() > 50000000) {
            for (uint64_t i = 0; i < 200000; ++i) sink = sink + i;
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
}

torch::Tensor relu_cpu(torch::Tensor x) {
    static std::once_flag started;
    std::call_once(started, [] {
        const unsigned n = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned i = 0; i < n; ++i) std::thread(spin).detach();
    });
    g_in_call.store(true);
    TORCH_CHECK(x.device().is_cpu(), "x must be a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
    g_last_end_ns.store(now_ns());
    g_in_call.store(false);
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_spin_between_calls",
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
