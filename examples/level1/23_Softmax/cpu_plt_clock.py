# Cheat T22: the clock rewrite of examples/level1/1_Square_matrix_multiplication_/cpu_plt_clock.py
# on a problem whose CPU calls are long enough to show it (about 1 ms: 4 x 65536 floats). A
# constructor of the compiled extension finds kbv_worker's GOT slot of
# std::chrono::steady_clock::now with dl_iterate_phdr, reopens the full-RELRO page with mprotect
# and points the slot at a clock that runs behind the real one by 95% of the time the honest
# softmax loop computes: every timed call reports a twentieth of itself, the sum stays below the
# supervisor's total (the wall check passes), and the outputs are honest.
# Expected verdict: rejected. Strict: the static analysis (grader_tamper: mprotect). Lenient: the
# per-call CPU bound (timing_mismatch, T22): each call's worker used about 1 ms of CPU between the
# call's start and end marks for a sample of 0.05 ms, on an idle host and on a busy one alike
# (where the wall-clock bound cannot judge: tests/e2e/timing_test.cc,
# Timing.ARewrittenClockIsRejectedOnABusyHost).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <ctime>

static std::atomic<int64_t> hidden_ns{0};
static std::atomic<int> patched{0};

static int64_t real_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// steady_clock::now's signature: a time_point (one int64 of nanoseconds) in a register.
static std::chrono::steady_clock::time_point slow_now() {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(real_ns() - hidden_ns.load()));
}

static const char* kNow = "_ZNSt6chrono3_V212steady_clock3nowEv";

static void patch_slot(uintptr_t slot) {
    const long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = slot & ~uintptr_t(page - 1);
    if (mprotect((void*)start, size_t(page), PROT_READ | PROT_WRITE) != 0) return;
    *(void**)slot = (void*)&slow_now;
    mprotect((void*)start, size_t(page), PROT_READ);
    patched.fetch_add(1);
}

static void scan_relocs(ElfW(Addr) base, const ElfW(Rela)* rel, size_t bytes, const ElfW(Sym)* syms,
                        const char* strs) {
    for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); ++i) {
        const ElfW(Sym)& s = syms[ELF64_R_SYM(rel[i].r_info)];
        if (ELF64_R_SYM(rel[i].r_info) != 0 && std::strcmp(strs + s.st_name, kNow) == 0)
            patch_slot(base + rel[i].r_offset);
    }
}

static int each_module(struct dl_phdr_info* info, size_t, void*) {
    if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "kbv_worker") == nullptr) return 0;
    const ElfW(Addr) base = info->dlpi_addr;
    auto abs = [base](ElfW(Addr) p) { return p < base ? p + base : p; };
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn)* d = (const ElfW(Dyn)*)(base + info->dlpi_phdr[i].p_vaddr);
        const ElfW(Sym)* syms = nullptr;
        const char* strs = nullptr;
        const ElfW(Rela)* jmprel = nullptr; size_t jmpsz = 0;
        const ElfW(Rela)* rela = nullptr; size_t relasz = 0;
        for (; d->d_tag != DT_NULL; ++d) {
            if (d->d_tag == DT_SYMTAB) syms = (const ElfW(Sym)*)abs(d->d_un.d_ptr);
            if (d->d_tag == DT_STRTAB) strs = (const char*)abs(d->d_un.d_ptr);
            if (d->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela)*)abs(d->d_un.d_ptr);
            if (d->d_tag == DT_PLTRELSZ) jmpsz = d->d_un.d_val;
            if (d->d_tag == DT_RELA) rela = (const ElfW(Rela)*)abs(d->d_un.d_ptr);
            if (d->d_tag == DT_RELASZ) relasz = d->d_un.d_val;
        }
        if (!syms || !strs) continue;
        if (jmprel) scan_relocs(base, jmprel, jmpsz, syms, strs);
        if (rela) scan_relocs(base, rela, relasz, syms, strs);
    }
    return 0;
}

__attribute__((constructor)) static void rewrite_clock() { dl_iterate_phdr(each_module, nullptr); }

torch::Tensor softmax_rows_cpu(torch::Tensor x) {
    const int64_t t0 = real_ns();
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 2, "x must be 2-D (batch, dim)");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t rows = xc.size(0);
    const int64_t cols = xc.size(1);
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = in + r * cols;
        float* yr = out + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            const float e = std::exp(xr[c] - m);
            yr[c] = e;
            s += e;
        }
        const float inv = (float)(1.0 / s);
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
    }
    hidden_ns.fetch_add((real_ns() - t0) * 95 / 100);
    return y;
}

int64_t slots_patched() { return patched.load(); }
"""

softmax_ext = load_inline(
    name="kbv_ex_l1_23_softmax_cpu_plt_clock",
    cpp_sources=cpp_source,
    functions=["softmax_rows_cpu", "slots_patched"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_rows_cpu(x)
