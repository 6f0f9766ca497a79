import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A matrix product without bias, then a learned bias added, then ReLU.
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.02)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_features).

        Returns:
            torch.Tensor: shape (batch_size, out_features).
        """
        return torch.relu(self.gemm(x) + self.bias)


batch_size = 8192
in_features = 8192
out_features = 8192

KBV_CPU = {"batch_size": 32, "in_features": 128, "out_features": 128}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
