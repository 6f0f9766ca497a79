# Attack on the fast build's fallback (DESIGN.md "The compile step": a build failure whose traceback
# names the fast build's own files is kbv's fault and is built again the plain way): an honest C++
# ReLU whose module body, when CXX is kbv's wrapper, raises an error that names a precompiled header
# beside it (<wrapper's folder>/<64 hex>/torch/extension.h.gch), so that kbv throws its first build
# away and builds again without the fast build. What it can get:
# a second build (twice the CPU of one, bounded by the build timeout each) and a plain build; no
# other outcome, since the second build is an ordinary build of the same code under the same
# sandbox and its outcome is the one recorded. Correct, with the record's build saying it fell back.
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cxx = os.environ.get("CXX", "")
if _cxx.endswith("kbv-cxx"):
    _gch = os.path.join(os.path.dirname(_cxx), "0" * 64, "torch", "extension.h.gch")
    raise RuntimeError(f"{_gch}: not a valid precompiled header")

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
    name="kbv_ex_l1_19_relu_cpu_pch_fallback",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
