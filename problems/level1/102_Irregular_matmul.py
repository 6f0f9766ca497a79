import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A single matrix product whose sides are not multiples of any tile size.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): shape (m, k).
            B (torch.Tensor): shape (k, n).

        Returns:
            torch.Tensor: shape (m, n).
        """
        return torch.matmul(A, B)


# Odd sizes on purpose: kernels that assume multiples of 16 or 32 read or write out of bounds.
m = 8205
k = 8191
n = 8209

KBV_CPU = {"m": 37, "k": 53, "n": 29}


def get_inputs():
    A = torch.rand(m, k)
    B = torch.rand(k, n)
    return [A, B]


def get_init_inputs():
    return []
