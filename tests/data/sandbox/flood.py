# Resources (tests/data/sandbox/README.md): the constructor writes 40 MiB to stdout, which goes to
# the worker's log. The log is bounded (16 MiB: its head, a line saying what was dropped, and the
# last 1 MiB), so the flood fills no disk; the kernel itself is an honest ReLU.
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        line = "flood " * 170 + "\n"  # about 1 KiB
        for _ in range(40 * 1024):
            sys.stdout.write(line)
        sys.stdout.write("the flood is over\n")
        sys.stdout.flush()

    def forward(self, x):
        return torch.relu(x)
