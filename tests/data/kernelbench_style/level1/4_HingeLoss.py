import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Mean hinge loss with +-1 targets.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 4096
classes = 64


def get_inputs():
    return [torch.rand(batch_size, classes), torch.randint(0, 2, (batch_size, classes)).float() * 2 - 1]


def get_init_inputs():
    return []
