import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Unreduced hinge loss with integer labels: max(0, 1 - prediction * label), labels in {-1, +1}.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """
        Args:
            predictions (torch.Tensor): float, shape (batch_size, classes).
            labels (torch.Tensor): int64 in {-1, +1}, same shape.

        Returns:
            torch.Tensor: float, same shape.
        """
        return torch.clamp(1 - predictions * labels, min=0)


batch_size = 32768
classes = 16384

KBV_CPU = {"batch_size": 64, "classes": 512}


def get_inputs():
    predictions = torch.rand(batch_size, classes)
    # int64 labels: never scaled by the hidden distributions (a float -1/+1 label would be).
    labels = torch.randint(0, 2, (batch_size, classes)) * 2 - 1
    return [predictions, labels]


def get_init_inputs():
    return []
