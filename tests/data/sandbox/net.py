# Sandbox attack (tests/data/sandbox/README.md): the network. Sockets of any family but AF_UNIX, and
# a TCP connection to a port the test listens on, must all fail.
import os
import socket

import torch
import torch.nn as nn


def _attacks():
    breached = []
    port = int(os.environ.get("KBV_ATTACK_PORT", "0"))
    families = [(socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_STREAM)]
    if hasattr(socket, "AF_NETLINK"):
        families.append((socket.AF_NETLINK, socket.SOCK_RAW))
    if hasattr(socket, "AF_PACKET"):
        families.append((socket.AF_PACKET, socket.SOCK_RAW))
    for family, kind in families:
        try:
            s = socket.socket(family, kind)
        except OSError:
            continue
        breached.append(f"socket({family.name}) created")
        if family == socket.AF_INET and port:
            try:
                s.settimeout(2)
                s.connect(("127.0.0.1", port))
                breached.append(f"connected to 127.0.0.1:{port}")
            except OSError:
                pass
        s.close()
    return breached


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        breached = _attacks()
        if breached:
            raise RuntimeError("sandbox breached: " + "; ".join(breached))

    def forward(self, x):
        return torch.relu(x)
