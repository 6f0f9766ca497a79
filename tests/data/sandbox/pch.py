# Sandbox attack (tests/data/sandbox/README.md): the fast build's shared files (DESIGN.md, "The
# compile step"). The build worker runs this module body too (load_inline is called from it), with
# CXX naming kbv's compiler wrapper in the folder of the precompiled headers that every later
# candidate's build reads: replacing the wrapper, planting a precompiled header for a flag set or a
# file in that folder would make another candidate's build use this one's code. Every write must
# fail, in the build worker (the test checks the folder afterwards) and in the candidate worker.
import os

import torch
import torch.nn as nn


def _attacks():
    breached = []
    cxx = os.environ.get("CXX", "")
    root = os.path.dirname(cxx) if cxx.endswith("kbv-cxx") else ""
    if not root:
        return ["no fast build: CXX is " + repr(cxx)]  # the test needs the wrapper to attack it
    safe = os.environ.get("KBV_ATTACK_SAFE") == "1"
    created = [os.path.join(root, "kbv_sandbox_evil"),
               os.path.join(root, "0" * 64, "torch", "extension.h.gch")]
    for path in created:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "x") as f:
                f.write("#error poisoned\n")
            os.remove(path)
            breached.append(f"created {path}")
        except OSError:
            pass
    if not safe:
        try:
            with open(cxx, "a") as f:
                f.write("\n# evil: written by a sandboxed candidate\n")
            breached.append(f"wrote {cxx}")
        except OSError:
            pass
        try:
            os.replace(cxx, cxx + ".moved")
            breached.append(f"moved {cxx}")
        except OSError:
            pass
    return breached


_BREACHED = _attacks()  # at import: in the build worker as in the candidate worker


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if _BREACHED:
            raise RuntimeError("sandbox breached: " + "; ".join(_BREACHED))

    def forward(self, x):
        return torch.relu(x)
