# Cheat T11: the "CUDA kernel" is a wrapper that hands the product to cuBLAS
# (cublasSgemm on PyTorch's handle and stream): no kernel of its own, the
# library torch.matmul uses does the work. Values are right.
# Expected verdict: rejected (static rule aten_compute: library compute with no
# kernel or loop of its own).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda(), "A and B must be CUDA tensors");
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shape mismatch");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int M = (int)a.size(0), K = (int)a.size(1), N = (int)b.size(1);
    auto C = torch::empty({M, N}, a.options());
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T.
    TORCH_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, b.data_ptr<float>(), N,
                            a.data_ptr<float>(), K, &beta, C.data_ptr<float>(), N) == CUBLAS_STATUS_SUCCESS,
                "cublasSgemm failed");
    return C;
}
"""

cpp_source = "torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"

matmul_ext = load_inline(
    name="kbv_ex_l1_1_matmul_cuda_cublas",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["matmul_cuda"],
    extra_cuda_cflags=["-O3"],
    extra_ldflags=["-lcublas"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_cuda(A, B)
