import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A standard 2D convolution: 3x3 kernel, stride 1, padding 1 (same size out), with bias.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, height, width).
        """
        return self.conv(x)


batch_size = 64
in_channels = 128
out_channels = 128
height = 256
width = 256
kernel_size = 3
padding = 1

KBV_CPU = {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 12, "width": 16}


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
