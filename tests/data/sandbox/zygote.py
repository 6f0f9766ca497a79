# Sandbox attack (tests/data/sandbox/README.md): the worker zygote (DESIGN.md "Worker zygote").
# Every worker is a fork of one process that imported torch. What a candidate must not get from
# that: the zygote's socket (with it, a fork of its own choosing: any sandbox, any role), another
# worker's fork request in the memory it was forked with (the reference's environment and
# sandbox), or the zygote itself to signal. The first two hold under every --sandbox; the third is
# the sandbox's (its control run under `off` sees the zygote). Controls of the checks themselves:
# the scan must find a marker this candidate puts in its own memory, and the socket check must see
# a SOCK_SEQPACKET socket this candidate makes.
import os
import re
import socket
import stat
import struct

import torch
import torch.nn as nn

# Patterns whose own text is not what they match (a bracketed letter): the solution's text, the
# patterns and any copy of them are in this worker's memory too, and must not be found.
_OTHER_REQUESTS = [re.compile(rb'"role":"r[e]ference"'), re.compile(rb'"role":"b[u]ild"'),
                   re.compile(rb"KBV_SHM_SHARE[D]=1")]


def _seqpacket_pairs():
    """{fd: pid of the process that made the pair} of the unnamed SOCK_SEQPACKET sockets held: the
    zygote's is one end of a socketpair that kbv made (its pid is 0 seen from a PID namespace).
    Sockets with a name (CUDA's) and ones whose peer cannot be read are not counted."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if (s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_SEQPACKET
                    and s.family == socket.AF_UNIX and not s.getsockname() and not s.getpeername()):
                pid, _, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
                found[fd] = pid
        except OSError:
            pass
        finally:
            s.close()  # the duplicate
    return found


def _readable_memory():
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if len(fields) < 2 or not fields[1].startswith("rw") or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                yield mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue


def _attacks():
    breached = []
    # Control: a pair of its own is seen, made by itself.
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pairs = _seqpacket_pairs()
    if pairs.get(a.fileno()) != os.getpid() or pairs.get(b.fileno()) != os.getpid():
        raise RuntimeError("the attack is broken: its socket check missed its own SOCK_SEQPACKET pair")
    a.close()
    b.close()
    breached += [f"holds a SOCK_SEQPACKET socket of a pair another process made (fd {fd}, pid {pid})"
                 for fd, pid in sorted(pairs.items()) if pid != os.getpid()]

    # Control: a marker of its own is found.
    marker = bytearray(b"kbv-zygote-")
    marker += b"control-%d" % os.getpid()
    control = re.compile(rb"kbv-zygote-contro[l]-%d" % os.getpid())
    seen_marker, seen_requests = False, set()
    for chunk in _readable_memory():
        seen_marker = seen_marker or control.search(chunk) is not None
        seen_requests.update(m.pattern.decode().replace("[", "").replace("]", "") for m in _OTHER_REQUESTS
                             if m.search(chunk))
    if not seen_marker:
        raise RuntimeError("the attack is broken: its memory scan missed its own marker")
    breached += [f"finds another worker's fork request ({m}) in its memory" for m in sorted(seen_requests)]

    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"kbv_worker.zygote()" in cmd:
            try:
                os.kill(int(entry), 0)
                breached.append(f"signal 0 to the worker zygote (pid {entry}) delivered")
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
