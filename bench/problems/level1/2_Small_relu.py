# Benchmark problem (tests/e2e/timing_test.cc, GPU): a ReLU on 4 MiB, which fits in the L2 of
# any recent GPU, so a timer without an L2 flush measures it cache-hot.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.rand(1024, 1024)]


def get_init_inputs():
    return []
