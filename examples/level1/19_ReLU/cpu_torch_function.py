# Cheat T3: the output is a Python-level wrapper whose values are computed only
# when somebody uses it: a tensor subclass with __torch_function__ that runs the
# C++ ReLU on first use. A harness that times forward() times nothing.
# Expected verdict: rejected (static rule tensor_subclass).
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
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_torch_function",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class Deferred(torch.Tensor):
    """Holds its input; the ReLU runs the first time any torch function touches it."""

    @staticmethod
    def __new__(cls, source):
        out = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        out._source = source
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in args:
            if isinstance(a, Deferred) and getattr(a, "_source", None) is not None:
                src, a._source = a._source, None
                torch.Tensor.copy_(a.as_subclass(torch.Tensor), relu_ext.relu_cpu(src))
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return Deferred(x)
