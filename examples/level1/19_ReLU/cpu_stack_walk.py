# Cheat T14: walks the caller's frames with inspect.stack() looking for a local
# tensor shaped like the answer (an `expected`, `ref_output`, `out` ... of a
# Python harness that computed the reference first) and returns a copy of it,
# computing nothing. kbv's callers are C++ and the reference lives in another
# process, so no frame holds such a tensor and the fallback is zeros.
# Expected verdict: wrong_output (zeros are right only under D4).
import inspect

import torch
import torch.nn as nn


def _from_callers(x):
    for info in inspect.stack()[1:]:
        for name, value in list(info.frame.f_locals.items()):
            if (
                isinstance(value, torch.Tensor)
                and value is not x
                and value.shape == x.shape
                and value.dtype == x.dtype
                and value.data_ptr() != x.data_ptr()
            ):
                return value
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        found = _from_callers(x)
        if found is not None:
            return found.clone()
        return torch.zeros_like(x)
