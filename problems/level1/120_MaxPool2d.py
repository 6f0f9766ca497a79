import torch
import torch.nn as nn


class Model(nn.Module):
    """
    2D max pooling, 3x3 window, stride 2, padding 1 (padded positions never win).
    """

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super(Model, self).__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, channels, height_out, width_out).
        """
        return self.pool(x)


batch_size = 96
channels = 64
height = 512
width = 512
kernel_size = 3
stride = 2
padding = 1

# Odd sides on the CPU: the last window overhangs the edge.
KBV_CPU = {"batch_size": 2, "channels": 4, "height": 17, "width": 17}


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
