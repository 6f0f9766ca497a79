# Upstream KernelBench L1/37's pattern in kbv's words: the input divided by its Frobenius norm,
# taken over the whole tensor. With x uniform in [0, 1) every output is at most sqrt(3/N) for N
# elements: ~4e-5 at these 1.9e9 elements (7 GiB), so an all-zero output is within atol 1e-3
# there; at the reduced sizes (the norm runs over everything, so its size is scaled) it is not.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.norm(x, p="fro")


batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return []
