# Sandbox attack (tests/data/sandbox/README.md): other processes' memory. The reference worker holds
# the expected outputs and the secret seeds: it must not even be visible, and reading any other
# process (/proc/<pid>/mem, process_vm_readv, ptrace) must fail.
import ctypes
import os

import torch
import torch.nn as nn

_libc = ctypes.CDLL(None, use_errno=True)


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


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


def _first_mapping(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return int(f.readline().split("-")[0], 16)
    except (OSError, ValueError, IndexError):
        return 0x10000


def _attacks():
    breached = []
    safe = os.environ.get("KBV_ATTACK_SAFE") == "1"
    references = _reference_workers()
    breached += [f"sees the reference worker (pid {p})" for p in references]
    targets = references + ([] if safe else [1, os.getppid()])
    for pid in sorted(set(t for t in targets if t > 0)):
        address = _first_mapping(pid)
        try:
            with open(f"/proc/{pid}/mem", "rb") as m:
                m.seek(address)
                data = m.read(16)
            if data:
                breached.append(f"read {len(data)} bytes of /proc/{pid}/mem")
        except (OSError, ValueError, OverflowError):
            pass
        buffer = ctypes.create_string_buffer(16)
        local = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), 16)
        remote = _Iovec(ctypes.c_void_p(address), 16)
        n = _libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if n > 0:
            breached.append(f"process_vm_readv read {n} bytes of pid {pid}")
        if not safe:
            if _libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
                _libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
                breached.append(f"ptrace attached to pid {pid}")
    return breached


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        breached = _attacks()
        if breached:
            raise RuntimeError("sandbox breached: " + "; ".join(breached))

    def forward(self, x):
        return torch.relu(x)
