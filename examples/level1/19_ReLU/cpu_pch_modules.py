# Attack on the fast build (DESIGN.md "The compile step", fast build): an honest C++ ReLU whose
# module body, run in kbv's build worker, writes a flag list of its own into its build folder as
# the wrapper would (.kbv-pch-want-*): torch's own flags plus -fmodules-ts, a flag of the -f family
# the precompiled-header allow-list let through. kbv precompiles torch/extension.h with those flags
# OUTSIDE the sandbox after the build, and with -fmodules-ts GCC also writes a header unit into
# gcm.cache/ of the folder it runs in, which was kbv's working folder (the user's, a run folder
# where eval_results.json lives). kbv must refuse the module flags (-fmodules-ts, -fmodule-header,
# -fmodule-mapper=FILE) and run every precompile in its own temporary folder; the candidate itself
# is honest and correct.
import os
import sysconfig

import torch
import torch.nn as nn
from torch.utils import cpp_extension
from torch.utils.cpp_extension import load_inline


def _leave_flags_for_kbv():
    # The flag set kbv's own probe trusts (torch's and Python's include folders), plus the module flag.
    flags = ["-DTORCH_API_INCLUDE_EXTENSION_H"]
    for d in list(cpp_extension.include_paths("cpu")) + [sysconfig.get_path("include", scheme="posix_prefix")]:
        flags += ["-isystem", d]
    flags += ["-fPIC", "-std=c++17", "-O3", "-fmodules-ts"]
    folder = os.environ.get("TORCH_EXTENSIONS_DIR", "")
    try:
        with open(os.path.join(folder, ".kbv-pch-want-modules"), "w") as f:
            f.write("".join(flag + "\0" for flag in flags))
    except OSError:
        pass


_leave_flags_for_kbv()

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
    name="kbv_ex_l1_19_relu_cpu_pch_modules",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
