import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Causal scaled dot-product attention: query i attends to keys 0..i only.
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
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 32
heads = 32
seq_len = 2048
head_dim = 128

KBV_CPU = {"batch_size": 1, "heads": 2, "seq_len": 64, "head_dim": 32}


def get_inputs():
    q = torch.rand(batch_size, heads, seq_len, head_dim)
    k = torch.rand(batch_size, heads, seq_len, head_dim)
    v = torch.rand(batch_size, heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return []
