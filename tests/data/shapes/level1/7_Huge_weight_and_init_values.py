# tests/data/shapes: a Linear of 2**20 x 2**20 (4 TiB of float32 weight) whose constructor reads
# one of its drawn values (`.item()`), which a meta tensor does not have. `kbv problems` builds
# the Model on the meta device first; this one fails there and is built for real, which no
# machine can: the row is an error that says both.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super(Model, self).__init__()
        self.fc = nn.Linear(features, features)
        self.gain = float(self.fc.bias.abs().max().item())

    def forward(self, x):
        return self.fc(x) * self.gain


features = 2**20


def get_inputs():
    return [torch.rand(2, features)]


def get_init_inputs():
    return [features]
