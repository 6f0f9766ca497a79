import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Scaled dot-product attention without a mask: softmax(q k^T / sqrt(head_dim)) v.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """
        Args:
            q, k, v (torch.Tensor): shape (batch_size, heads, seq_len, head_dim) each.

        Returns:
            torch.Tensor: shape (batch_size, heads, seq_len, head_dim).
        """
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


batch_size = 32
heads = 32
seq_len = 1024
head_dim = 128

KBV_CPU = {"batch_size": 1, "heads": 2, "seq_len": 64, "head_dim": 32}


def get_inputs():
    q = torch.rand(batch_size, heads, seq_len, head_dim)
    k = torch.rand(batch_size, heads, seq_len, head_dim)
    v = torch.rand(batch_size, heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return []
