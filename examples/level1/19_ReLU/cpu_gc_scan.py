# Cheat T14: scans gc.get_objects() for a live tensor that looks like the
# expected output (same shape, dtype and device as x, not x itself, no negative
# value) and returns a copy of it, computing nothing. In a harness that runs the
# reference in the candidate's process, the reference's output is such a
# tensor. kbv never computes the reference in the candidate's process, so the
# scan finds nothing and the fallback is zeros.
# Expected verdict: wrong_output (zeros are right only under D4).
import gc

import torch
import torch.nn as nn


def _find_expected(x):
    for obj in gc.get_objects():
        try:
            if (
                isinstance(obj, torch.Tensor)
                and obj is not x
                and obj.shape == x.shape
                and obj.dtype == x.dtype
                and obj.device == x.device
                and obj.data_ptr() != x.data_ptr()
                and not obj.requires_grad
                and bool((obj >= 0).all())
                and bool((obj > 0).any())
            ):
                return obj
        except Exception:
            continue
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        found = _find_expected(x)
        if found is not None:
            return found.clone()
        return torch.zeros_like(x)
