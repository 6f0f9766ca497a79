# Cheat attempt (escaping judgement through harness_error, T14): a WRONG kernel (half of the
# ReLU) whose module body, the code load_inline runs inside kbv's build worker, first writes a
# reply of its own on the worker's reply channel (fd 4: a 4-byte little-endian length, then a JSON
# object) that claims the host's failure, {"ok": false, "kind": "harness_error", "message":
# "cannot start the build worker: ..."}, and ends the process before the real reply. kbv turned a
# build failure's kind into the build's outcome verbatim: harness_error is never stored (kbv eval
# exits 3, --run leaves the sample for a re-run, the queue retries it) and the build cache kept the
# forged outcome, so the candidate was never judged, on any later run either. A worker's reply
# is a claim: the kinds that say the host or the user stopped it (harness_error, interrupted) are
# kbv's own to decide, never a reply's (cpu_forge_interrupted.py forges "interrupted" from the
# candidate worker).
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


_forge("harness_error", "cannot start the build worker: fork: Resource temporarily unavailable")

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
    name="kbv_ex_l1_19_relu_cpu_forge_host_failure",
    cpp_sources=cpp_source,
    functions=["half_relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.half_relu_cpu(x)
