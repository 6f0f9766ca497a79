# tests/data/shapes: get_inputs() reads a drawn value (`.item()`), which a meta tensor does not
# have: `kbv problems` draws it for real and says why.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    n = int(torch.randint(3, 5, (1,)).item())
    return [torch.rand(n, 16)]


def get_init_inputs():
    return []
