import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Matrix product (control: nothing to find).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 128
K = 256
N = 96


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
