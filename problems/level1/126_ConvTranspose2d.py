import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A transposed 2D convolution that doubles the spatial size: kernel 4, stride 2, padding 1,
    with bias.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int):
        super(Model, self).__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, 2 * height, 2 * width).
        """
        return self.deconv(x)


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
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
