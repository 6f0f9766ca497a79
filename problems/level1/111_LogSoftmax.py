import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Log-softmax over the last dimension: x - logsumexp(x).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): shape (batch_size, dim).

        Returns:
            torch.Tensor: same shape, log-probabilities along dim 1.
        """
        return torch.log_softmax(x, dim=1)


batch_size = 4096
dim = 393216

KBV_CPU = {"batch_size": 8, "dim": 16384}


def get_inputs():
    # Every log-probability sits near -log(dim) ~ -13, so the tolerance's relative part
    # (1e-3 * 13) is wider than torch.rand's spread once the inputs are scaled by 0.01 (D3):
    # without the factor 10, the constant -log(dim) passes D3 (kbv lint-problems: "constant").
    x = torch.rand(batch_size, dim) * 10
    return [x]


def get_init_inputs():
    return []
