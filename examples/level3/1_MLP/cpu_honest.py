# Honest CPU solution: each layer is one C++ call computing x @ W^T + b with
# an optional fused ReLU. Layers are nn.Linear created in the same order as in
# Model, so seed 42 gives the same weights.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor linear_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, bool relu) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.size(0) == w.size(0),
                "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int64_t M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t m = 0; m < M; ++m) {
        const float* xr = px + m * K;
        for (int64_t n = 0; n < N; ++n) {
            const float* wr = pw + n * K;
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
            float v = acc + pb[n];
            py[m * N + n] = (relu && v < 0.0f) ? 0.0f : v;
        }
    }
    return y;
}
"""

mlp_ext = load_inline(
    name="kbv_ex_l3_1_mlp_cpu_honest",
    cpp_sources=cpp_source,
    functions=["linear_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super(ModelNew, self).__init__()
        layers = []
        current_input_size = input_size
        for layer_size in layer_sizes:
            layers.append(nn.Linear(current_input_size, layer_size))
            current_input_size = layer_size
        layers.append(nn.Linear(current_input_size, output_size))
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = mlp_ext.linear_cpu(x, layer.weight, layer.bias, i < last)
        return x
