import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 3x3x3 convolution (padding 1), LeakyReLU (slope 0.2), a learned per-channel term added,
    then a clamp to [-1, 1].
    """

    def __init__(self, in_channels, out_channels, kernel_size, negative_slope):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.negative_slope = negative_slope
        self.shift = nn.Parameter(torch.randn(out_channels, 1, 1, 1) * 0.1)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, depth, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, depth, height, width).
        """
        x = self.conv(x)
        x = torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)
        x = x + self.shift
        return torch.clamp(x, min=-1.0, max=1.0)


batch_size = 16
in_channels = 32
out_channels = 96
depth = 64
height = 80
width = 80
kernel_size = 3
negative_slope = 0.2

KBV_CPU = {"batch_size": 1, "in_channels": 3, "out_channels": 4, "depth": 6, "height": 8, "width": 10}


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, negative_slope]
