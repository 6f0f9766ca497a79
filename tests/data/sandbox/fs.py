# Sandbox attack (tests/data/sandbox/README.md): the filesystem. Persistence (a .pth in the worker's
# site-packages runs in every later worker), the system's files, the run's store, the problem file
# and the cache's baselines and calibration: every write must fail.
import os
import site

import torch
import torch.nn as nn


def _attacks():
    breached = []
    victims = os.environ.get("KBV_ATTACK_DIR", "")
    safe = os.environ.get("KBV_ATTACK_SAFE") == "1"
    # Files that exist: appended to (the test compares them afterwards).
    appended = []
    if victims:
        appended += [os.path.join(victims, "kbv.sqlite"), os.path.join(victims, "19_ReLU.py")]
    # Files that do not exist: created, then removed at once if that worked.
    created = []
    if not safe:
        created += [os.path.join(p, "kbv_sandbox_evil.pth") for p in site.getsitepackages()]
        cache = os.environ.get("KBV_CACHE_DIR", "")
        if cache:
            created += [os.path.join(cache, d, "kbv_sandbox_evil.json") for d in ("baselines", "calibration", "")]
        try:
            with open("/etc/passwd", "a"):
                breached.append("/etc/passwd opened for writing")
        except OSError:
            pass
    for path in appended:
        try:
            with open(path, "a") as f:
                f.write("\n# written by a sandboxed candidate\n")
            breached.append(f"wrote {path}")
        except OSError:
            pass
    for path in created:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "x") as f:
                f.write("import os\n")
            os.remove(path)
            breached.append(f"created {path}")
        except OSError:
            pass
    return breached


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        breached = _attacks()
        if breached:
            raise RuntimeError("sandbox breached: " + "; ".join(breached))

    def forward(self, x):
        return torch.relu(x)
