import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A ResNet basic block: conv3x3 - BatchNorm - ReLU - conv3x3 - BatchNorm, plus the input,
    then ReLU. Batch normalisation in training mode (batch statistics).
    """

    def __init__(self, channels):
        super(Model, self).__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: same shape.
        """
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + x)


batch_size = 96
channels = 128
height = 128
width = 128

KBV_CPU = {"batch_size": 2, "channels": 4, "height": 8, "width": 8}


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
