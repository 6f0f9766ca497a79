import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Group normalisation: channels split into groups, each (sample, group) normalised over its
    channels and spatial positions, then a per-channel affine.
    """

    def __init__(self, num_groups: int, num_channels: int):
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: same shape.
        """
        return self.gn(x)


batch_size = 64
channels = 256
groups = 8
height = 256
width = 256

KBV_CPU = {"batch_size": 2, "channels": 16, "groups": 4, "height": 16, "width": 16}


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [groups, channels]
