import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 1D convolution over long sequences: kernel 5, stride 1, padding 2, with bias.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_channels, length).

        Returns:
            torch.Tensor: shape (batch_size, out_channels, length).
        """
        return self.conv(x)


batch_size = 64
in_channels = 256
out_channels = 256
length = 32768
kernel_size = 5
padding = 2

KBV_CPU = {"batch_size": 2, "in_channels": 8, "out_channels": 8, "length": 128}


def get_inputs():
    x = torch.rand(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
