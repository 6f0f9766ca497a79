import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A depthwise 2D convolution (groups = channels): each channel has its own 3x3 filter;
    stride 1, padding 1, with bias.
    """

    def __init__(self, channels: int, kernel_size: int, padding: int):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=padding, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: same shape.
        """
        return self.conv(x)


batch_size = 64
channels = 256
height = 256
width = 256
kernel_size = 3
padding = 1

KBV_CPU = {"batch_size": 2, "channels": 8, "height": 16, "width": 16}


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, kernel_size, padding]
