# Sandbox attack (tests/data/sandbox/README.md): the grader's processes. SIGSTOP to the supervisor
# (the parent) or the reference, pinning the reference's threads (sched_setaffinity) or changing
# its priority: every attempt must fail.
import os
import signal

import torch
import torch.nn as nn


def _reference_workers():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"kbv_worker" in cmd and b"reference" in cmd:
            found.append(int(entry))
    return found


def _attacks():
    breached = []
    safe = os.environ.get("KBV_ATTACK_SAFE") == "1"
    sig = 0 if safe else signal.SIGSTOP
    targets = [("parent", os.getppid())] + [("reference", p) for p in _reference_workers()]
    for name, pid in targets:
        if pid <= 0:
            continue
        try:
            os.kill(pid, sig)
            breached.append(f"signal {int(sig)} to the {name} (pid {pid}) delivered")
            if sig == signal.SIGSTOP:
                os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
        try:
            os.sched_setaffinity(pid, os.sched_getaffinity(pid))  # its own mask: harmless if it works
            breached.append(f"sched_setaffinity on the {name} (pid {pid})")
        except OSError:
            pass
        try:
            os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid))
            breached.append(f"setpriority on the {name} (pid {pid})")
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
