import torch
import torch.nn as nn


class Model(nn.Module):
    """
    3D convolution, group normalisation, then the mean over everything but the batch.
    """

    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.group_norm(x)
        return x.mean(dim=[1, 2, 3, 4])


batch_size = 8
in_channels = 3
out_channels = 16
D, H, W = 8, 16, 16
kernel_size = 3
num_groups = 4


def get_inputs():
    return [torch.rand(batch_size, in_channels, D, H, W)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
