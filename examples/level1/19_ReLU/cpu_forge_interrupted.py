# Cheat attempt (escaping judgement through "interrupted", T14): a WRONG kernel (half of the ReLU)
# whose forward, in kbv's candidate worker, writes a reply of its own on the worker's reply channel
# (fd 4: a 4-byte little-endian length, then a JSON object) that claims the call was interrupted,
# {"ok": false, "kind": "interrupted"}, and ends the process before the real reply. An interrupted
# evaluation is never stored (kbv eval and --run leave it for a re-run, the queue gives the job
# back): a candidate that says so of itself is never judged. Only kbv's own interrupt flag says
# "interrupted"; a reply that claims it is the candidate's runtime_error.
import io
import json
import os
import struct

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


def _forge(kind, message):
    # Through io.FileIO rather than os.write, which the static analysis rejects by name: the
    # static rules are a first filter, the verdict cannot rest on them.
    body = json.dumps({"ok": False, "kind": kind, "message": message}).encode()
    try:
        with io.FileIO(4, "wb", closefd=False) as channel:
            channel.write(struct.pack("<I", len(body)) + body)
    except OSError:
        return
    os._exit(0)


cpp_source = r"""
#include <torch/extension.h>

torch::Tensor half_relu_cpu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? 0.5f * in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_forge_interrupted",
    cpp_sources=cpp_source,
    functions=["half_relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = relu_ext.half_relu_cpu(x)
        _forge("interrupted", "interrupted by the user (SIGINT)")
        return y
