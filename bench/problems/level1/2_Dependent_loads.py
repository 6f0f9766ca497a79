# Benchmark problem (tests/e2e/timing_test.cc, GPU): the sum of 4096 floats visited in a fixed
# order across a 16 MiB input, which fits in the L2 of an H100 or H200 (50-60 MiB). Its CUDA
# candidate (tests/data/cuda_dependent_loads.py) makes each visit's address depend on the value
# loaded before, so a call costs 4096 memory latencies: DRAM's after an L2 flush, L2's when the
# freshly copied input is still cached. The gap is milliseconds, not the microseconds of host
# launch noise that hid it with a 4 MiB ReLU. Not a problem to judge kernels with: a sum of 4096
# values barely varies, and `kbv lint-problems` flags it (`insensitive`, `constant` under D3).
import torch
import torch.nn as nn

N = 4 * 1024 * 1024   # float32 elements: 16 MiB
STEPS = 4096          # visits, each on a different 128-byte line
STRIDE = 32 * 2053    # elements between visits (2053 is prime: 131072 distinct lines before a repeat)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = (torch.arange(STEPS, device=x.device, dtype=torch.int64) * STRIDE) % N
        return x.reshape(-1)[idx].sum().reshape(1)


def get_inputs():
    return [torch.rand(N)]


def get_init_inputs():
    return []
