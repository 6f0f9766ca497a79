import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A linear layer, exact (erf) GELU, a constant scale (an inverse temperature), then softmax
    over the features.
    """

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, in_features).

        Returns:
            torch.Tensor: shape (batch_size, out_features); each row sums to 1.
        """
        x = self.gemm(x)
        x = torch.nn.functional.gelu(x)
        return torch.softmax(x * self.scale, dim=1)


batch_size = 8192
in_features = 8192
out_features = 8192
# Without the scale, the inputs' share of the logits under D3 (x0.01) is so small at 8192 features
# that two different batches' softmaxes differ by only 1.2e-3 relative (kbv lint-problems stats).
scale = 10.0

KBV_CPU = {"batch_size": 32, "in_features": 128, "out_features": 128}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
