import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Mean squared error per sample: mean over the features of (predictions - targets)^2.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """
        Args:
            predictions (torch.Tensor): shape (batch_size, features).
            targets (torch.Tensor): same shape.

        Returns:
            torch.Tensor: shape (batch_size,).
        """
        return torch.nn.functional.mse_loss(predictions, targets, reduction="none").mean(dim=1)


# One loss per sample, not one per batch: a mean over a whole batch of i.i.d. draws is so
# concentrated that a constant passes the tolerance (kbv lint-problems: "constant").
batch_size = 65536
features = 16384

KBV_CPU = {"batch_size": 64, "features": 512}


def get_inputs():
    return [torch.rand(batch_size, features), torch.rand(batch_size, features)]


def get_init_inputs():
    return []
