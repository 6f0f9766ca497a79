# Cheat T2: forward hands the product to a Python thread pool and returns the
# still-zero output at once; the pool thread fills it in whenever it gets to
# run. A harness that looks at the output only after waiting (or after a timing
# loop) sees the right values.
# Expected verdict: rejected (static rule threads). Not run under the lenient
# policy: whether the pool thread gets the GIL before the output is copied is
# up to the interpreter's scheduler.
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

void matmul_into_cpu(torch::Tensor A, torch::Tensor B, torch::Tensor C) {
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* pc = C.data_ptr<float>();
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) {
            const float aik = pa[i * K + k];
            for (int64_t j = 0; j < N; ++j) pc[i * N + j] += aik * pb[k * N + j];
        }
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_thread_pool",
    cpp_sources=cpp_source,
    functions=["matmul_into_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

_POOL = ThreadPoolExecutor(max_workers=1)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        C = torch.zeros(A.size(0), B.size(1), dtype=A.dtype, device=A.device)
        _POOL.submit(matmul_ext.matmul_into_cpu, A.clone(), B.clone(), C)
        return C
