# tests/data/shapes: a Linear of 2**20 x 2**20 (4 TiB of float32 weight). `kbv problems` lists its
# shapes with the Model built on the meta device (no weight allocated).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super(Model, self).__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x):
        return self.fc(x)


features = 2**20


def get_inputs():
    return [torch.rand(2, features)]


def get_init_inputs():
    return [features]
