# Benchmark problem (bench/bench.py overhead): a call that does almost nothing, to measure what the
# timer itself costs. One element plus one.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1.0


def get_inputs():
    return [torch.rand(1)]


def get_init_inputs():
    return []
