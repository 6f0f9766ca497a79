import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A transposed convolution doubling the spatial size (kernel 4, stride 2, padding 1), a learned
    per-channel offset subtracted, then tanh.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.offset = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, 2 * height, 2 * width).
        """
        x = self.deconv(x)
        return torch.tanh(x - self.offset)


batch_size = 64
in_channels = 256
out_channels = 128
height = 128
width = 128
kernel_size = 4
stride = 2
padding = 1

KBV_CPU = {"batch_size": 2, "in_channels": 4, "out_channels": 3, "height": 8, "width": 8}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
