import torch
import torch.nn as nn


class Model(nn.Module):
    """
    1D max pooling with a dilated window: 5 taps, dilation 2 (a span of 9), stride 2, padding 2.
    """

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super(Model, self).__init__()
        self.pool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, channels, length).

        Returns:
            torch.Tensor: shape (batch_size, channels, length_out).
        """
        return self.pool(x)


batch_size = 192
channels = 64
length = 131072
kernel_size = 5
stride = 2
padding = 2
dilation = 2

KBV_CPU = {"batch_size": 2, "channels": 4, "length": 127}


def get_inputs():
    x = torch.rand(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
