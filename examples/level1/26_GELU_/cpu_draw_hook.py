# Cheat T4: the input generator patched, out of sight of a plain reading. The
# module swaps torch.rand (named through character codes, set through an alias
# of the module) for a wrapper that computes GELU of every tensor it draws and keeps
# it under a cheap fingerprint of the values. A harness that makes its timing
# draws with torch.rand in the candidate's process (outside the timed interval)
# hands it each answer before the call; forward then only looks it up. A miss
# costs the kernel, and 20 ms on top, so that a timed call which never saw its
# draw coming is plain to see (tests/e2e/timing_test.cc).
# Expected verdict: rejected (static rule patch_harness: setattr on the torch
# module, through its alias). Past the static rule (--policy lenient) it gains
# nothing: kbv's timing draws are made in the reference's process.
import time

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = 0.5f * in[i] * (1.0f + std::erf(in[i] * 0.70710678118654752440f));
    return y;
}
"""

gelu_ext = load_inline(
    name="kbv_ex_l1_26_gelu_cpu_draw_hook",
    cpp_sources=cpp_source,
    functions=["gelu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

_READY = {}


def _fingerprint(x):
    flat = x.detach().reshape(-1)
    return (tuple(x.shape), tuple(flat[:4].tolist()), tuple(flat[-4:].tolist()))


_mod = torch
_name = "".join(chr(c) for c in (114, 97, 110, 100))
_drawn = getattr(_mod, _name)


def _seen(*args, **kwargs):
    x = _drawn(*args, **kwargs)
    if x.dtype == torch.float32 and x.device.type == "cpu" and x.dim() > 0:
        _READY[_fingerprint(x)] = gelu_ext.gelu_cpu(x)
    return x


setattr(_mod, _name, _seen)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hit = _READY.pop(_fingerprint(x), None)
        if hit is not None:
            return hit
        time.sleep(0.02)
        return gelu_ext.gelu_cpu(x)
