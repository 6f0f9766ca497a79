import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Index of the minimum along one dimension (int64; the first index on ties).
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, dim1, dim2).

        Returns:
            torch.Tensor: int64 indices, x's shape with dimension self.dim removed.
        """
        return torch.argmin(x, dim=self.dim)


batch_size = 128
dim1 = 4096
dim2 = 4096
reduce_dim = 2

KBV_CPU = {"batch_size": 4, "dim1": 256, "dim2": 255}


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
