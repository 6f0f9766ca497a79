import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A pre-norm self-attention block: x + out_proj(attention(LayerNorm(x))), with multi-head
    scaled dot-product attention (no mask) and a fused q/k/v projection.
    """

    def __init__(self, embed_dim, num_heads):
        super(Model, self).__init__()
        self.num_heads = num_heads
        self.norm = nn.LayerNorm(embed_dim)
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, seq_len, embed_dim).

        Returns:
            torch.Tensor: same shape.
        """
        b, s, e = x.shape
        h = self.num_heads
        qkv = self.qkv(self.norm(x))                                  # (b, s, 3e)
        qkv = qkv.reshape(b, s, 3, h, e // h).permute(2, 0, 3, 1, 4)  # (3, b, h, s, e/h)
        attn = torch.nn.functional.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        attn = attn.transpose(1, 2).reshape(b, s, e)
        return x + self.out_proj(attn)


batch_size = 64
seq_len = 1024
embed_dim = 1024
num_heads = 16

KBV_CPU = {"batch_size": 2, "seq_len": 16, "embed_dim": 32, "num_heads": 4}


def get_inputs():
    return [torch.rand(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
