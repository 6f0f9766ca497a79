# Cheat T25: escapes the CPU thread budget. kbv pins the candidate's worker and the baselines' to
# the same CPUs (--cpu-threads, 1 by default) so that a speedup compares kernels, not schedulers.
# This tanh runs its loop in an OpenMP team of one thread per CPU of the machine, and each thread
# first widens its own affinity to every CPU (sched_setaffinity, ignoring a refusal), so the work
# is spread over more cores than the baselines had: on an idle 2-core host up to ~2x for nothing.
# The team's threads stay in OpenMP's pool between calls.
# Expected verdict: rejected by the static analysis (cpu_affinity). Past it (--policy lenient) the
# sandbox's seccomp filter refuses the call and the threads share the budget's one CPU (correct, no
# gain); with --sandbox off kbv finds the widened threads after the timing (thread_budget_escaped,
# reject): tests/e2e/timing_test.cc, Timing.AWidenedAffinityEscapesNoBudget.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>
#include <cmath>

static void widen() {
    cpu_set_t all;
    CPU_ZERO(&all);
    const long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    sched_setaffinity(0, sizeof all, &all);  // refused under the sandbox: carry on regardless
}

torch::Tensor tanh_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    const int parts = static_cast<int>(std::max<long>(1, sysconf(_SC_NPROCESSORS_CONF)));
    #pragma omp parallel num_threads(parts)
    {
        widen();
        #pragma omp for
        for (int64_t i = 0; i < n; ++i) out[i] = std::tanh(in[i]);
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_107_cpu_widen_affinity",
    cpp_sources=cpp_source,
    functions=["tanh_cpu"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.tanh_cpu(x)
