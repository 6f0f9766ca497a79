# Cheat T6: batches work across calls. Each call snapshots A and B (O(N^2)) and
# returns a zero output; every 4th call multiplies all four pending pairs in one
# C++ call and fills their outputs. A harness that times a run of calls and
# checks outputs only at the end sees four right answers and a quarter of the
# per-call work inside most timed windows; kbv checks each call's output as soon
# as it returns.
# Expected verdict: wrong_output (three calls in four return zeros).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <vector>

void matmul_batch_cpu(std::vector<torch::Tensor> As, std::vector<torch::Tensor> Bs,
                      std::vector<torch::Tensor> Cs) {
    TORCH_CHECK(As.size() == Bs.size() && As.size() == Cs.size(), "batch size mismatch");
    for (size_t t = 0; t < As.size(); ++t) {
        auto a = As[t].contiguous();
        auto b = Bs[t].contiguous();
        auto& c = Cs[t];
        TORCH_CHECK(c.is_contiguous() && c.scalar_type() == torch::kFloat32, "bad output");
        const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
        const float* pa = a.data_ptr<float>();
        const float* pb = b.data_ptr<float>();
        float* pc = c.data_ptr<float>();
        for (int64_t i = 0; i < M * N; ++i) pc[i] = 0.0f;
        for (int64_t i = 0; i < M; ++i)
            for (int64_t k = 0; k < K; ++k) {
                const float aik = pa[i * K + k];
                for (int64_t j = 0; j < N; ++j) pc[i * N + j] += aik * pb[k * N + j];
            }
    }
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_batch_calls",
    cpp_sources=cpp_source,
    functions=["matmul_batch_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

BATCH = 4


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self._pending = []

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        C = torch.zeros(A.size(0), B.size(1), dtype=A.dtype, device=A.device)
        # Copies, not references: the caller may free A and B once we return.
        self._pending.append((A.clone(), B.clone(), C))
        if len(self._pending) >= BATCH:
            As, Bs, Cs = zip(*self._pending)
            matmul_ext.matmul_batch_cpu(list(As), list(Bs), list(Cs))
            self._pending = []
        return C
