import torch
import torch.nn as nn


class Model(nn.Module):
    """
    C = A^T @ B, where A is stored as (k, m): the product reads A column by column.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): shape (k, m).
            B (torch.Tensor): shape (k, n).

        Returns:
            torch.Tensor: shape (m, n).
        """
        return torch.matmul(A.T, B)


m = 8192
k = 8192
n = 8192

KBV_CPU = {"m": 40, "k": 48, "n": 36}


def get_inputs():
    A = torch.rand(k, m)
    B = torch.rand(k, n)
    return [A, B]


def get_init_inputs():
    return []
