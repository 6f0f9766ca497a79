# Cheat T4: patches the comparison functions a Python harness would call
# (torch.allclose, torch.equal, torch.isclose, torch.testing.assert_close) so
# that every comparison passes, and returns all ones without computing
# anything. kbv compares outputs in C++ in the reference worker, a process the
# candidate does not run in, so the patch has no effect there.
# Expected verdict: wrong_output (ones are wrong on every distribution).
import torch
import torch.nn as nn

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda input, other, *args, **kwargs: torch.ones_like(input, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(x)
