import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 3D convolution: 3x3x3 kernel, stride 1, padding 1, with bias.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, depth, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, depth, height, width).
        """
        return self.conv(x)


batch_size = 16
in_channels = 32
out_channels = 96
depth = 64
height = 80
width = 80
kernel_size = 3
padding = 1

KBV_CPU = {"batch_size": 1, "in_channels": 3, "out_channels": 4, "depth": 6, "height": 8, "width": 10}


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
