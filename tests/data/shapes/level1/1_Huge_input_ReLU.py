# tests/data/shapes: an input of 2**50 float32 elements (4 PiB). `kbv problems` lists its shape
# from a meta-device draw; a real draw fails at once (no machine can allocate it).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


rows = 2**40
cols = 1024


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
