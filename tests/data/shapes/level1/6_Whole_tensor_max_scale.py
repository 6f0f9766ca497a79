# A whole-tensor normalisation that is not degenerate: the input divided by its largest
# magnitude, over the whole tensor as in 5_Whole_tensor_norm.py, at the same 1.9e9 elements. The
# outputs stay spread over [0, 1] at every size, so no size makes zeros pass: the lint's
# extrapolation to the file's sizes must not flag it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.abs().amax()


batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return []
