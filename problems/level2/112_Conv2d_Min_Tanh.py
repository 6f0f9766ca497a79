import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 3x3 convolution (padding 1), the minimum over the channels, then tanh: a reduction over
    the convolution's output channels.
    """

    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, 1, height, width).
        """
        x = self.conv(x)
        x = torch.min(x, dim=1, keepdim=True).values
        return torch.tanh(x)


batch_size = 64
in_channels = 128
out_channels = 128
height = 256
width = 256
kernel_size = 3

KBV_CPU = {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
