import torch
import torch.nn as nn
from einops import rearrange


class Model(nn.Module):
    """
    Patch embedding as upstream's level 3 vision problems write it: einops.rearrange, then a linear
    layer. Upstream problems import einops, so the workers' environment must hold it.
    """

    def __init__(self, patch, dim):
        super(Model, self).__init__()
        self.patch = patch
        self.proj = nn.Linear(patch * patch * 3, dim)

    def forward(self, x):
        p = self.patch
        x = rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=p, p2=p)
        return self.proj(x)


batch_size = 4
image_size = 32
patch = 8
dim = 64


def get_inputs():
    return [torch.rand(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [patch, dim]
