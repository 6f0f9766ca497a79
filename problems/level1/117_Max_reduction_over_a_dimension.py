import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Maximum over one dimension (a strided one by default); values only.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, dim1, dim2).

        Returns:
            torch.Tensor: x with dimension self.dim removed.
        """
        return torch.max(x, dim=self.dim).values


# A short reduced dimension: the maximum of n torch.rand values is 1 - O(1/n), so over
# thousands of values every maximum is within the tolerance of the constant 1.0
# (kbv lint-problems: "constant"); over 64 it still varies by about 1.5%.
batch_size = 1920
dim1 = 64
dim2 = 16384
reduce_dim = 1

KBV_CPU = {"batch_size": 4, "dim1": 64, "dim2": 255}


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
