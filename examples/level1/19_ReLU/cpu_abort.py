# Failure: forward kills its own process (SIGABRT). Expected verdict: crashed.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os.abort()
