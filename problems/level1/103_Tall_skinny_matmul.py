import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A tall matrix (many rows, few columns) times a small square matrix.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): shape (rows, k), rows much larger than k.
            B (torch.Tensor): shape (k, n).

        Returns:
            torch.Tensor: shape (rows, n).
        """
        return torch.matmul(A, B)


rows = 524288
k = 1024
n = 1024

KBV_CPU = {"rows": 512, "k": 32, "n": 32}


def get_inputs():
    A = torch.rand(rows, k)
    B = torch.rand(k, n)
    return [A, B]


def get_init_inputs():
    return []
