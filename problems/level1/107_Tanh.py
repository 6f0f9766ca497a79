import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Elementwise hyperbolic tangent.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): any shape.

        Returns:
            torch.Tensor: same shape as x.
        """
        return torch.tanh(x)


batch_size = 4096
dim = 393216

KBV_CPU = {"batch_size": 16, "dim": 4096}


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
