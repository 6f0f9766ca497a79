import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Huber loss per sample (delta 1): quadratic for |d| <= delta, linear beyond, averaged over
    the features.
    """

    def __init__(self, delta: float):
        super(Model, self).__init__()
        self.delta = delta

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """
        Args:
            predictions (torch.Tensor): shape (batch_size, features).
            targets (torch.Tensor): same shape.

        Returns:
            torch.Tensor: shape (batch_size,).
        """
        loss = torch.nn.functional.huber_loss(predictions, targets, reduction="none", delta=self.delta)
        return loss.mean(dim=1)


batch_size = 65536
features = 16384
delta = 1.0

KBV_CPU = {"batch_size": 64, "features": 512}


def get_inputs():
    return [torch.rand(batch_size, features), torch.rand(batch_size, features)]


def get_init_inputs():
    return [delta]
