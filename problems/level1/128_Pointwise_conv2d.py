import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A pointwise (1x1) 2D convolution with bias: a channel-mixing matrix product at every pixel.
    """

    def __init__(self, in_channels: int, out_channels: int):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, height, width).
        """
        return self.conv(x)


batch_size = 128
in_channels = 512
out_channels = 512
height = 128
width = 128

KBV_CPU = {"batch_size": 2, "in_channels": 16, "out_channels": 8, "height": 8, "width": 8}


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels]
