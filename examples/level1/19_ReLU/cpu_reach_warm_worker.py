# Cheat attempt (T19/T21 and T18 against warm workers, DESIGN.md "Warm workers"): an honest C++
# ReLU whose constructor goes after the worker that --warm-workers started ahead and that waits for
# the NEXT candidate. It looks for another kbv candidate worker to take over before it gets its
# candidate: SIGSTOP, ptrace (PTRACE_SEIZE), /proc/<pid>/mem opened for writing,
# process_vm_readv/process_vm_writev of one byte of its memory (written back unchanged). And it plants
# Python files where that worker would import them when it loads its candidate: sitecustomize,
# usercustomize, a .pth, a __pycache__ entry in every folder of sys.path, a module beside
# torch.utils. Any success is a breach, reported as a runtime_error (a planted file is removed at
# once; with KBV_ATTACK_SAFE=1 only signal 0, reads and checks: nothing is stopped, traced or
# written). Under the sandbox nothing gets through: the waiting worker is in its own PID namespace,
# behind seccomp, Landlock's signal scope and another process's memory, and every folder on its
# import path is read-only (this candidate may write only its own /tmp, its own copy of the build
# folder and /dev/shm, on no import path).
import ctypes
import os
import signal
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_reach_warm_worker",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _other_candidate_workers():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (os.getpid(), os.getppid()):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if any(b"kbv_worker" in a for a in args) and b"candidate" in args:
            found.append(int(entry))
    return found


def _one_mapped_byte(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            if perms.startswith("rw"):
                return int(span.split("-")[0], 16)
    return None


def _attacks(pid):
    breached = []
    safe = os.environ.get("KBV_ATTACK_SAFE") == "1"
    try:
        os.kill(pid, 0 if safe else signal.SIGSTOP)
        breached.append(f"signalled the candidate worker {pid}")
        if not safe:
            os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if not safe and libc.ptrace(0x4206, pid, None, None) == 0:  # PTRACE_SEIZE: does not stop it
        breached.append(f"ptrace-seized the candidate worker {pid}")
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    try:
        with open(f"/proc/{pid}/mem", "r+b"):
            breached.append(f"opened /proc/{pid}/mem for writing")
    except OSError:
        pass
    try:
        address = _one_mapped_byte(pid)
    except OSError:
        address = None
    if address is not None:
        byte = ctypes.create_string_buffer(1)
        local = _IoVec(ctypes.cast(byte, ctypes.c_void_p), 1)
        remote = _IoVec(address, 1)
        libc.process_vm_readv.restype = ctypes.c_ssize_t
        libc.process_vm_writev.restype = ctypes.c_ssize_t
        if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 1:
            breached.append(f"process_vm_readv of the candidate worker {pid}")
            if not safe and libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 1:
                breached.append(f"process_vm_writev into the candidate worker {pid}")
    return breached


_TAG = sys.implementation.cache_tag or "cpython"


def _plant_targets():
    folders = [p for p in sys.path if p and os.path.isdir(p)]
    out = []
    for d in folders:
        out += [os.path.join(d, "sitecustomize.py"), os.path.join(d, "usercustomize.py"),
                os.path.join(d, "kbv_planted.pth"), os.path.join(d, "__pycache__", f"sitecustomize.{_TAG}.pyc")]
    # torch.utils.cpp_extension's folder: a module the next candidate's load could import.
    out.append(os.path.join(os.path.dirname(torch.__file__), "utils", "kbv_planted.py"))
    return out


def _plant():
    breached = []
    safe = os.environ.get("KBV_ATTACK_SAFE") == "1"
    for path in _plant_targets():
        if safe:
            if os.access(os.path.dirname(path), os.W_OK):
                breached.append(f"could plant {path}")
            continue
        try:
            with open(path, "x") as f:
                f.write("import os\nos.environ['KBV_PLANTED'] = '1'\n")
        except OSError:
            continue
        breached.append(f"planted {path}")
        try:
            os.remove(path)
        except OSError:
            pass
    return breached


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        breached = []
        for pid in _other_candidate_workers():
            breached += _attacks(pid)
        breached += _plant()
        if breached:
            raise RuntimeError("sandbox breached: " + "; ".join(breached[:6]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
