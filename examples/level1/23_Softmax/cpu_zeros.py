# Cheat T10: returns zeros. Every softmax value of a 65536-wide (or wider) row
# is below 1e-3, so zeros pass an elementwise allclose(atol=rtol=1e-3); only
# the relative-L2 error floor (here 100%) rejects it, on every distribution.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
