# Dtype fallback (not a cheat, the most common bf16 failure): a kernel written for float32 only.
# It reads the inputs with data_ptr<float>(), which torch refuses on a bfloat16 tensor, so under
# --precision bf16 the candidate fails; kbv says the kernel does not accept bfloat16 inputs
# instead of quoting the bare exception. Correct under fp32.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_fp32(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    auto C = torch::zeros({M, N}, a.options());
    float* pc = C.data_ptr<float>();
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < N; ++j) pc[i * N + j] += pa[i * K + k] * pb[k * N + j];
    return C;
}
"""

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cpu_fp32_only",
    cpp_sources=cpp_source,
    functions=["matmul_fp32"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_fp32(A, B)
