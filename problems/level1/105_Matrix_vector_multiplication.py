import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A matrix times a column vector: y = A @ x. Bound by reading A once.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): shape (m, k).
            x (torch.Tensor): shape (k, 1).

        Returns:
            torch.Tensor: shape (m, 1).
        """
        return torch.matmul(A, x)


# k is kept moderate: each y[i] sums k products of torch.rand values, whose relative spread
# shrinks like 0.9 / sqrt(k); at k = 81920 a constant would miss the 1e-3 floor by only 3x.
m = 245760
k = 8192

KBV_CPU = {"m": 64, "k": 2048}


def get_inputs():
    A = torch.rand(m, k)
    x = torch.rand(k, 1)
    return [A, x]


def get_init_inputs():
    return []
