import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A linear layer, a learned per-feature scale, then batch normalisation over the batch
    (training mode: batch statistics, biased variance).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.rand(out_features) + 0.5)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_features).

        Returns:
            torch.Tensor: shape (batch_size, out_features).
        """
        x = self.gemm(x)
        x = x * self.scale
        return self.bn(x)


batch_size = 8192
in_features = 8192
out_features = 8192

KBV_CPU = {"batch_size": 32, "in_features": 128, "out_features": 128}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
