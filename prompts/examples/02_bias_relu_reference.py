import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales the input, adds a learned bias along the last dimension, applies ReLU."""

    def __init__(self, features: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * self.scale + self.bias)


batch_size = 2048
features = 4096
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, features, device="cuda")]


def get_init_inputs():
    return [features, scale]
