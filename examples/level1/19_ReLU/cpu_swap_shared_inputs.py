# Attack on the baselines' twin (T17, docs/TIMING.md "The baselines' twin"): an honest C++ ReLU that
# slows its baseline instead of itself. Under CPU paired rounds the fp32/tf32 baselines are timed in
# a twin, a candidate-kind worker that maps the reference's timing buffers by name from the /dev/shm
# folder it shares with the candidate. On each timed call (its input the same buffer four calls in
# a row, as the checks' and audits' never are) this candidate renames every buffer file of its input's size it
# finds there and puts a file of the same name and size in its place, full of a denormal
# (arithmetic on which is 10-100x slower on x86 without flush-to-zero). The reference
# keeps writing its draws into the renamed originals, which this candidate maps itself and reads
# whenever its own input comes from a fake, so its own outputs stay right; the twin, importing by
# name, would time its blocks on the fakes. kbv's handles carry the exporter's inode and a
# candidate-kind worker refuses a file of that name with another: the candidate's own next block
# (round 1 follows its round-0 block at once) is refused first, and the sample is rejected
# (shared_buffer_replaced). The folder is the candidate's (the sandbox gives it to the candidate's
# user), so nothing else stops the rename; the path is assembled so that the static analysis
# does not see it.
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_swap_shared_inputs",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

_SHM = "/".join(["", "dev", "shm"])
_FAKE = 1e-39  # a float32 denormal
_real = []  # the renamed originals, mapped (the reference keeps writing its draws there)
_seen = set()
_run = [0, 0]  # the last input pointer, and how many calls in a row had it


def _timed(t):
    # A timed call's input is the worker's own live buffer, the same one call after call (the draw
    # copied into it); the checks and audits hand a few calls each their own buffers.
    ptr = t.data_ptr()
    _run[1] = _run[1] + 1 if ptr == _run[0] else 1
    _run[0] = ptr
    return _run[1] >= 4


def _swap(nbytes):
    for name in os.listdir(_SHM):
        path = os.path.join(_SHM, name)
        if not name.startswith("kbv-") or name.endswith(".real") or name in _seen:
            continue
        _seen.add(name)
        try:
            if os.stat(path).st_size != nbytes:
                continue
            os.rename(path, path + ".real")
            with open(path, "wb") as f:
                f.write(torch.full((nbytes // 4,), _FAKE).numpy().tobytes())
            _real.append(torch.from_file(path + ".real", shared=True, size=nbytes // 4))
        except OSError:
            continue


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _timed(x):  # the timing buffers are in the folder now
            _swap(x.numel() * x.element_size())
            if x.numel() > 0 and bool((x == _FAKE).all()) and _real:  # fed a fake: the draw is in the original
                x = _real[-1].view_as(x).clone()
        return relu_ext.relu_cpu(x)
