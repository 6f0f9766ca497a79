# Cheat T13: reseeds the generator with the seed a harness is known to use and
# draws the "inputs" itself, so that, in a harness that generates inputs the
# same way in the candidate's process, it can compute (or precompute) on a copy
# it made. Here it applies its ReLU to its own draw. kbv draws inputs in
# another process from secret seeds: the draw is not the input.
# Expected verdict: rejected (static rules rng_seed, regenerate_inputs).
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
    name="kbv_ex_l1_19_relu_cpu_seed_replay",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(42)
        replayed = torch.rand(x.shape, dtype=x.dtype, device=x.device)
        return relu_ext.relu_cpu(replayed)
