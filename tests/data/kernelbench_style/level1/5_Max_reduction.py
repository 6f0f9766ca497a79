import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Maximum over a long dimension.
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim).values


batch_size = 16
dim1 = 16384
dim2 = 16


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
