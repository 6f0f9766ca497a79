import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 3x3 convolution (padding 1), group normalisation, a learned per-channel scale, 2x2 max
    pooling, then a clamp to [clamp_min, clamp_max].
    """

    def __init__(self, in_channels, out_channels, kernel_size, num_groups, clamp_min, clamp_max):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.gn = nn.GroupNorm(num_groups, out_channels)
        self.scale = nn.Parameter(torch.rand(out_channels, 1, 1) + 0.5)
        self.pool = nn.MaxPool2d(kernel_size=2)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, height // 2, width // 2).
        """
        x = self.conv(x)
        x = self.gn(x)
        x = x * self.scale
        x = self.pool(x)
        return torch.clamp(x, self.clamp_min, self.clamp_max)


batch_size = 64
in_channels = 128
out_channels = 128
height = 256
width = 256
kernel_size = 3
num_groups = 8
clamp_min = -1.0
clamp_max = 1.0

KBV_CPU = {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16, "num_groups": 4}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups, clamp_min, clamp_max]
