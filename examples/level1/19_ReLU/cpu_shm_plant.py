# Attack on the folder a reference shares with its candidates (DESIGN.md "Sandbox", /dev/shm; the
# warm workers of one reference share it too): an honest C++ ReLU whose forward leaves files in
# that folder named as the REFERENCE's own (kbv-<reference pid>-...), the one prefix kbv kept when a
# candidate's files were removed at its end. Planted there, a file outlived its candidate: every
# later candidate of the same reference could read it (a channel between candidates, answers
# included) and each plant held host memory (tmpfs) until the reference stopped. The same forward
# first looks for a plant left by an EARLIER candidate and raises if it finds one, so a run of two
# samples of this file tells: the second must not see the first's files. The path is assembled, so
# the static analysis does not see it spelled.
import os
import uuid

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
    name="kbv_ex_l1_19_relu_cpu_shm_plant",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

_FOLDER = "/".join(["", "dev", "shm"])
_MINE = uuid.uuid4().hex  # this candidate's plants, told apart from an earlier candidate's


def _names():
    try:
        return os.listdir(_FOLDER)
    except OSError:
        return []


def _plant():
    # One file per owner prefix seen (the reference's among them), 1 MiB each.
    prefixes = {"-".join(n.split("-")[:2]) + "-" for n in _names() if n.startswith("kbv-") and n.count("-") >= 2}
    for p in prefixes:
        try:
            with open(os.path.join(_FOLDER, f"{p}planted-{_MINE}"), "xb") as f:
                f.write(b"\0" * (1 << 20))
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        earlier = [n for n in _names() if "-planted-" in n and _MINE not in n]
        if earlier:
            raise RuntimeError(f"found {_FOLDER}/{earlier[0]}, planted by an earlier candidate")
        _plant()
        return relu_ext.relu_cpu(x)
