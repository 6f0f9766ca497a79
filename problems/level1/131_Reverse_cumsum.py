import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Suffix sum along one dimension: out[i, j] = x[i, j] + ... + x[i, last].
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, length).

        Returns:
            torch.Tensor: same shape.
        """
        return torch.flip(torch.cumsum(torch.flip(x, [self.dim]), dim=self.dim), [self.dim])


batch_size = 32768
length = 32768
dim = 1

KBV_CPU = {"batch_size": 16, "length": 2048}


def get_inputs():
    x = torch.rand(batch_size, length)
    return [x]


def get_init_inputs():
    return [dim]
