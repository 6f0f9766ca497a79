import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 2D convolution with stride 2 and dilation 2: 3x3 taps spread over a 5x5 span, padding 2,
    with bias. The output is half the input's size.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int,
                 dilation: int):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                              dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, height_out, width_out).
        """
        return self.conv(x)


batch_size = 16
in_channels = 128
out_channels = 384
height = 512
width = 512
kernel_size = 3
stride = 2
padding = 2
dilation = 2

KBV_CPU = {"batch_size": 2, "in_channels": 4, "out_channels": 6, "height": 17, "width": 17}


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
