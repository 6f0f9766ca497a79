import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Doubles every column but the last, which it never writes: the output's last column is
    whatever memory the allocator handed back.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        out[:, :-1] = x[:, :-1] * 2
        return out


batch_size = 256
dim = 1024


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
