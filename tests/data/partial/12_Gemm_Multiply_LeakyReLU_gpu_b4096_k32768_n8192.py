# problems/level2/12_Gemm_Multiply_LeakyReLU.py at a GPU size with in_features = 32768 (the suite's is 8192),
# for the runtime audit's partial-replacement runs on the GPU (issue 29, bench/partial_audit.py --device cuda):
# the GEMM grows as b*k*n, the epilogue as b*n, so an own epilogue's share of the GPU time falls as 1/k.
import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a Gemm, multiplies the result, and applies LeakyReLU.
    """

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = self.leaky_relu(x)
        return x


batch_size = 4096
in_features = 32768
out_features = 8192
multiplier = 2.0
negative_slope = 0.1

KBV_CPU = {"batch_size": 16, "in_features": 256, "out_features": 256}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
