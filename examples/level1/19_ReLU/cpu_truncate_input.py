# Cheat attempt (escaping judgement, T14 against the reference worker): a WRONG kernel (half of the
# ReLU) that, after computing its output, truncates the shared-memory files through which the
# reference handed it the input (/dev/shm/kbv-* files the reference made 0666 so that the
# candidate's uid can map them; the path is assembled, so the static analysis does not see it). The reference reads that mapping back after the call (T8: inputs
# unchanged?) and a read past the end of a shrunk file is SIGBUS: if the reference dies, the check
# fails as "a dead reference" and the sample would be blamed on the problem (problem_error) instead
# of being judged incorrect. kbv must judge it on its own output: incorrect (or the truncation
# itself rejected), never problem_error or harness_error.
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

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
    name="kbv_ex_l1_19_relu_cpu_truncate_input",
    cpp_sources=cpp_source,
    functions=["half_relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


def _shared_files():
    # The folder the reference shares with this worker (its tensors' files, 0666 so that this uid
    # can map them). The path is assembled so that the static analysis does not see it spelled.
    folder = "/".join(["", "dev", "shm"])
    try:
        return [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith("kbv-")]
    except OSError:
        return []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = relu_ext.half_relu_cpu(x)
        for path in _shared_files():
            try:
                os.truncate(path, 0)  # the reference's next read of this mapping: SIGBUS
            except OSError:
                pass
        return y
