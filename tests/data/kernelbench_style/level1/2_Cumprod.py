import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Cumulative product along a long dimension.
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


batch_size = 64
length = 4000
dim = 1


def get_inputs():
    return [torch.rand(batch_size, length)]


def get_init_inputs():
    return [dim]
