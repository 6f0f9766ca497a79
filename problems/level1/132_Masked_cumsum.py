import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Prefix sum of the elements a boolean mask keeps: cumsum(x * mask) along one dimension.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): float, shape (batch_size, length).
            mask (torch.Tensor): bool, same shape.

        Returns:
            torch.Tensor: float, same shape.
        """
        return torch.cumsum(x * mask, dim=self.dim)


batch_size = 32768
length = 32768
dim = 1

KBV_CPU = {"batch_size": 16, "length": 2048}


def get_inputs():
    x = torch.rand(batch_size, length)
    # A bool input: the hidden distributions scale floating inputs only, so the mask stays 0/1.
    mask = torch.randint(0, 2, (batch_size, length)).bool()
    return [x, mask]


def get_init_inputs():
    return [dim]
