import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A batch of independent matrix products: C[b] = A[b] @ B[b].
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): shape (batch, m, k).
            B (torch.Tensor): shape (batch, k, n).

        Returns:
            torch.Tensor: shape (batch, m, n).
        """
        return torch.bmm(A, B)


batch = 64
m = 2048
k = 2048
n = 2048

KBV_CPU = {"batch": 4, "m": 32, "k": 48, "n": 40}


def get_inputs():
    A = torch.rand(batch, m, k)
    B = torch.rand(batch, k, n)
    return [A, B]


def get_init_inputs():
    return []
