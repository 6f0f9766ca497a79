# Honest CPU solution: max(0, 1 - prediction * label) elementwise with the int64 labels read as
# integers.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
torch::Tensor hinge_cpu(torch::Tensor pred, torch::Tensor labels) {
    TORCH_CHECK(pred.scalar_type() == torch::kFloat32 && labels.scalar_type() == torch::kInt64, "float32, int64");
    TORCH_CHECK(pred.sizes() == labels.sizes(), "shapes");
    auto pc = pred.contiguous(), lc = labels.contiguous();
    auto y = torch::empty_like(pc);
    const float* p = pc.data_ptr<float>();
    const int64_t* l = lc.data_ptr<int64_t>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < pc.numel(); ++i) {
        const float v = 1.0f - p[i] * (float)l[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_137_cpu_honest",
    cpp_sources=cpp_source,
    functions=["hinge_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, labels):
        return ext.hinge_cpu(predictions, labels)
