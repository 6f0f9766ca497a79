import torch
import torch.nn as nn


class Model(nn.Module):
    """
    ReLU (control: D4 makes the output all zeros, the other distributions judge).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
