import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A model that computes Cross Entropy Loss for multi-class classification tasks.

    Parameters:
        None
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


# 32768 * 16 rows (KernelBench has 32768 * 4): at 2 GiB of logits the loss took ~0.5 ms by
# estimate on an H200, under the 1 ms the suite asks for; 8 GiB takes ~1.8 ms.
batch_size = 32768 * 16
num_classes = 4096
dim = 1

# targets are integer class indices: the hidden distributions never scale them.
KBV_CPU = {"batch_size": 4096, "num_classes": 1024}

# Findings of `kbv lint-problems` this problem keeps, with the reason (docs/PROBLEMS.md).
_SCALAR_LOSS = ("one scalar: the mean loss over a batch of i.i.d. rows concentrates, so another draw's loss or "
                "a constant chosen per distribution passes D1, D3 and D4 (only D2 changes the constant); kept "
                "as KernelBench's problem 95 and for its cheat example cpu_constant; the per-sample losses "
                "(problems 133-136) judge loss kernels")
KBV_LINT_ALLOW = {"insensitive": _SCALAR_LOSS, "constant": _SCALAR_LOSS}


def get_inputs():
    return [torch.rand(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
