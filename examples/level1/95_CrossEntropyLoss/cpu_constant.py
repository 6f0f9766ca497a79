# Cheat T9: a hard-coded answer. For logits drawn uniformly from [0, 1) the
# mean cross-entropy is about log(C) + log(e - 1) - 1/2 whatever the targets,
# so this constant is close to the reference on D1 (and, by symmetry, on D4)
# when the batch is large, but far off when the logits are scaled by 3 (D2) or
# 0.01 (D3).
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        num_classes = predictions.shape[1]
        value = math.log(num_classes) + math.log(math.e - 1.0) - 0.5
        return torch.tensor(value, dtype=predictions.dtype, device=predictions.device)
