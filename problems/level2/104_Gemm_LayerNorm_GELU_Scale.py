import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A linear layer, layer normalisation over the features, exact GELU, then a constant scale.
    """

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        self.scale = scale

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_features).

        Returns:
            torch.Tensor: shape (batch_size, out_features).
        """
        x = self.gemm(x)
        x = self.norm(x)
        x = torch.nn.functional.gelu(x)
        return x * self.scale


batch_size = 8192
in_features = 8192
out_features = 8192
scale = 1.5

KBV_CPU = {"batch_size": 32, "in_features": 128, "out_features": 128}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
