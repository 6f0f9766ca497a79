# Cheat T9: identity "ReLU". Correct on non-negative inputs (torch.rand draws
# [0, 1)), wrong on the negated distribution D4.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
