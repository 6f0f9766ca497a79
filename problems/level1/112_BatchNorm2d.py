import torch
import torch.nn as nn


class Model(nn.Module):
    """
    2D batch normalisation in training mode: each channel is normalised with the mean and
    (biased) variance of the batch, then scaled and shifted by the affine parameters.
    """

    def __init__(self, num_features: int):
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, num_features, height, width).

        Returns:
            torch.Tensor: same shape.
        """
        return self.bn(x)


batch_size = 64
features = 64
height = 512
width = 512

KBV_CPU = {"batch_size": 4, "features": 8, "height": 16, "width": 16}


def get_inputs():
    x = torch.rand(batch_size, features, height, width)
    return [x]


def get_init_inputs():
    return [features]
