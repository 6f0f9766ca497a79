# Cheat T11: no kernel at all. forward calls PyTorch's own GELU, the reference
# operator; the values are right because they are PyTorch's.
# Expected verdict: rejected (static rule no_kernel_defined).
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x.contiguous())
