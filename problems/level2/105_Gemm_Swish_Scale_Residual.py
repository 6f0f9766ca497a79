import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A linear layer y, then y * sigmoid(y) * scale + y.
    """

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_features).

        Returns:
            torch.Tensor: shape (batch_size, out_features).
        """
        y = self.gemm(x)
        return y * torch.sigmoid(y) * self.scale + y


batch_size = 8192
in_features = 8192
out_features = 8192
scale = 2.0

KBV_CPU = {"batch_size": 32, "in_features": 128, "out_features": 128}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
