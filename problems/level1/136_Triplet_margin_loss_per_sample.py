import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Triplet margin loss per sample: max(d(a, p) - d(a, n) + margin, 0) with the Euclidean
    distance d(x, y) = ||x - y + eps|| (eps 1e-6, as torch.nn.functional.pairwise_distance).
    """

    def __init__(self, margin: float):
        super(Model, self).__init__()
        self.margin = margin

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        """
        Args:
            anchor, positive, negative (torch.Tensor): shape (batch_size, features) each.

        Returns:
            torch.Tensor: shape (batch_size,).
        """
        return torch.nn.functional.triplet_margin_loss(anchor, positive, negative, margin=self.margin,
                                                       reduction="none")


# A small margin: the distances shrink with the inputs under D3 (x0.01) while the margin does
# not; with a margin of 1, D3's losses are all about 1.0 and a constant misses the relative-L2
# floor by only 3x (kbv lint-problems stats); with 0.1 by about 30x.
batch_size = 40960
features = 16384
margin = 0.1

KBV_CPU = {"batch_size": 64, "features": 512}


def get_inputs():
    return [torch.rand(batch_size, features), torch.rand(batch_size, features), torch.rand(batch_size, features)]


def get_init_inputs():
    return [margin]
