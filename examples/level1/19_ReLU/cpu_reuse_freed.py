# Cheat T7: computes nothing and returns an uninitialised tensor of the right
# shape, counting on the allocator to hand back the block where the reference's
# output (just computed, just freed, in the same process) still lies. In kbv the
# reference never runs in the candidate's process, so the block holds whatever
# the candidate's own process left there (or fresh zero pages).
# Expected verdict: wrong_output (which distributions fail depends on what the
# allocator returns: zeros pass D4 only).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
