# Sandbox attack (tests/data/sandbox/README.md): a process left running outside the worker's
# process group (setsid), which would compete with the baseline's timing (T17). In the sandbox it
# stays in the worker's PID namespace: kbv names it (process_left_running) and it ends with the
# namespace before the baselines are timed.
import subprocess

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._spin = subprocess.Popen(["sh", "-c", "while :; do sleep 0.01; done"], start_new_session=True)

    def forward(self, x):
        return torch.relu(x)
