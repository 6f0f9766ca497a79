import torch
import torch.nn as nn


class Model(nn.Module):
    """
    3D average pooling, 3x3x3 window, stride 2, padding 1; padded zeros count in the average
    (count_include_pad=True, PyTorch's default).
    """

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super(Model, self).__init__()
        self.pool = nn.AvgPool3d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, channels, depth, height, width).

        Returns:
            torch.Tensor: shape (batch_size, channels, depth_out, height_out, width_out).
        """
        return self.pool(x)


batch_size = 16
channels = 28
depth = 64
height = 256
width = 256
kernel_size = 3
stride = 2
padding = 1

KBV_CPU = {"batch_size": 2, "channels": 3, "depth": 9, "height": 10, "width": 11}


def get_inputs():
    x = torch.rand(batch_size, channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
