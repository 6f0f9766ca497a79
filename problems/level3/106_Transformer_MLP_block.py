import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A pre-norm transformer feed-forward block: x + fc2(GELU(fc1(LayerNorm(x)))).
    """

    def __init__(self, embed_dim, hidden_dim):
        super(Model, self).__init__()
        self.norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, embed_dim)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (tokens, embed_dim).

        Returns:
            torch.Tensor: same shape.
        """
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


tokens = 16384
embed_dim = 2048
hidden_dim = 8192

KBV_CPU = {"tokens": 16, "embed_dim": 64, "hidden_dim": 256}


def get_inputs():
    return [torch.rand(tokens, embed_dim)]


def get_init_inputs():
    return [embed_dim, hidden_dim]
