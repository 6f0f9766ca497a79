import torch
import torch.nn as nn


class Model(nn.Module):
    """
    KL divergence KL(q || p) per row between the softmax distributions of two logit tensors:
    sum over the row of q * (log q - log p).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
        """
        Args:
            p_logits (torch.Tensor): shape (batch_size, classes).
            q_logits (torch.Tensor): same shape.

        Returns:
            torch.Tensor: shape (batch_size,).
        """
        log_p = torch.log_softmax(p_logits, dim=1)
        log_q = torch.log_softmax(q_logits, dim=1)
        kl = torch.nn.functional.kl_div(log_p, log_q, reduction="none", log_target=True)
        return kl.sum(dim=1)


# Logits, not probabilities, are the inputs: the hidden distributions scale them, and a
# negative "probability" under D4 would make log() NaN (kbv lint-problems: "nonfinite").
batch_size = 65536
classes = 16384

KBV_CPU = {"batch_size": 64, "classes": 512}


def get_inputs():
    # Logits spread over [0, 30): with torch.rand's [0, 1), D3 (x0.01) makes the two distributions
    # so close that the divergence (~1e-5) is mostly float32 cancellation, 2-5% off the float64
    # value, and an exact kernel fails (kbv lint-problems: "ill_conditioned"); with x30 the float32
    # error under D3 is ~5e-5.
    return [torch.rand(batch_size, classes) * 30, torch.rand(batch_size, classes) * 30]


def get_init_inputs():
    return []
