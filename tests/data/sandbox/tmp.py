# Sandbox attack (tests/data/sandbox/README.md): leftovers. Files left in /tmp, /dev/shm and
# /var/tmp must be gone once the evaluation ends (the test looks for them); writing them is allowed
# where the worker has a scratch folder.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        marker = os.environ.get("KBV_ATTACK_MARKER", "none")
        for folder in ("/tmp", "/dev/shm", "/var/tmp"):
            try:
                with open(os.path.join(folder, f"kbv-sandbox-left-{marker}"), "w") as f:
                    f.write("left behind by a candidate\n")
            except OSError:
                pass

    def forward(self, x):
        return torch.relu(x)
