# Cheat T9: a hard-coded answer. For logits drawn uniformly from [0, 1) the
# mean cross-entropy is about log(C) + log(e - 1) - 1/2 whatever the targets,
# so the C++ function returns that constant, reading nothing but the number of
# classes. It is close to the reference on D1 (and, by symmetry, on D4) when
# the batch is large, but far off when the logits are scaled by 3 (D2) or 0.01
# (D3).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor cross_entropy_constant_cpu(torch::Tensor predictions, torch::Tensor targets) {
    const double num_classes = (double)predictions.size(1);
    const double value = std::log(num_classes) + std::log(std::exp(1.0) - 1.0) - 0.5;
    return torch::full({}, value, predictions.options());
}
"""

ce_ext = load_inline(
    name="kbv_ex_l1_95_ce_cpu_constant",
    cpp_sources=cpp_source,
    functions=["cross_entropy_constant_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        return ce_ext.cross_entropy_constant_cpu(predictions, targets)
