# Cheat (T5/T6): a ReLU whose C++ keeps its last output and hands it back whenever it is called
# on the same input buffer as the call before, but only after its first 8 calls (the correctness
# checks of `--trials 2`, as the corpus test runs it: 2 trials x 4 distributions). A timing loop
# that calls it again and again on one buffer is fooled by such a cache; kbv refills the same
# buffer with new values before every timed call and spot-checks the outputs of timed calls, so
# it is rejected (spot_check_failed). At more trials the cache can already answer a correctness
# call (a fresh buffer may be mapped at the address of the previous one): wrong_output.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_remember(torch::Tensor x) {
    static const void* seen = nullptr;
    static torch::Tensor kept;
    static long calls = 0;
    auto xc = x.contiguous();
    ++calls;
    if (calls > 8 && xc.data_ptr() == seen && kept.defined()) return kept;
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    seen = xc.data_ptr();
    kept = y;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_pointer_cache",
    cpp_sources=cpp_source,
    functions=["relu_remember"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_remember(x)
