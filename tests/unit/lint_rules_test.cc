// The static rules: each fires on a minimal cheat and stays silent on its honest twin.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "lint/lint.h"
#include "util/fs.h"

namespace kbv {
namespace lint_rules_test {

namespace fs = std::filesystem;

// An honest C++ ReLU over data_ptr: a loop that stores through a pointer.
const std::string kLoop = R"CPP(
#include <torch/extension.h>
torch::Tensor f(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
)CPP";

// A solution: `head` at module level, C++ `cpp` exporting f(), ModelNew with `body` (methods,
// indented by 4).
std::string solution(const std::string& body, const std::string& cpp = kLoop, const std::string& head = "") {
  return "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n" + head +
         "\nsrc = r\"\"\"" + cpp + "\"\"\"\next = load_inline(name=\"t\", cpp_sources=src, functions=[\"f\"])\n\n"
         "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n" +
         body + "\n";
}

const std::string kForward = "    def forward(self, x):\n        return ext.f(x)\n";

LintReport lint(const std::string& code, Policy policy = Policy::strict) {
  LintOptions o;
  o.file = "sol.py";
  o.policy = policy;
  return lint_solution(code, o);
}

std::string dump(const LintReport& r) {
  std::string s;
  for (const auto& f : r.findings) s += f.evidence_text() + "  [" + f.severity + " " + f.rule + "] " + f.message + "\n";
  return s.empty() ? "(no findings)\n" : s;
}

int count(const LintReport& r, const std::string& rule, const std::string& severity = "reject") {
  int n = 0;
  for (const auto& f : r.findings) n += f.rule == rule && f.severity == severity;
  return n;
}

int rejects(const LintReport& r) {
  int n = 0;
  for (const auto& f : r.findings) n += f.severity == "reject";
  return n;
}

#define EXPECT_REJECTS(code, rule)                                        \
  do {                                                                    \
    LintReport r_ = lint(code);                                           \
    EXPECT_GE(count(r_, rule), 1) << "expected " << rule << ":\n" << dump(r_) << code; \
  } while (0)

#define EXPECT_CLEAN(code)                                                \
  do {                                                                    \
    LintReport r_ = lint(code);                                           \
    EXPECT_EQ(rejects(r_), 0) << dump(r_) << code;                        \
  } while (0)

TEST(LintRules, HonestSolutionIsClean) {
  LintReport r = lint(solution(kForward));
  EXPECT_TRUE(r.findings.empty()) << dump(r);
  EXPECT_EQ(r.units.size(), 1u);
}

TEST(LintRules, PatchTimer) {
  EXPECT_REJECTS(solution(kForward, kLoop, "import time\ntime.perf_counter = lambda: 0.0\n"), "patch_timer");
  EXPECT_REJECTS(solution(kForward, kLoop, "import time as t\nt.monotonic = t.time\n"), "patch_timer");
  EXPECT_REJECTS(solution(kForward, kLoop, "torch.cuda.Event.elapsed_time = lambda s, e: 1e-3\n"), "patch_timer");
  EXPECT_REJECTS(solution(kForward, kLoop, "setattr(torch.cuda, 'synchronize', lambda: None)\n"), "patch_timer");
  // Twins: reading the clock, rebinding a local name.
  EXPECT_CLEAN(solution(kForward, kLoop, "import time\nt0 = time.perf_counter()\n"));
  EXPECT_CLEAN(solution(kForward, kLoop, "from time import perf_counter\nperf_counter = None\n"));
}

TEST(LintRules, PatchHarness) {
  EXPECT_REJECTS(solution(kForward, kLoop, "torch.allclose = lambda *a, **k: True\n"), "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "import torch.nn.functional as F\nF.relu = lambda x: x\n"), "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "setattr(torch, 'equal', lambda *a: True)\n"), "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "import sys\nsys.modules['torch.testing'] = None\n"), "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "from unittest import mock\nmock.patch('torch.allclose').start()\n"),
                 "patch_harness");
  // Through an alias of the module, a name computed at runtime, the module's dict.
  EXPECT_REJECTS(solution(kForward, kLoop, "m = torch\nn = ''.join(['ra', 'nd'])\nsetattr(m, n, print)\n"),
                 "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "m = torch\nm.rand = print\n"), "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "m = torch.cuda\nk = m\nk.synchronize = print\n"), "patch_timer");
  EXPECT_REJECTS(solution(kForward, kLoop, "vars(torch)['rand'] = print\n"), "patch_harness");
  EXPECT_REJECTS(solution(kForward, kLoop, "import sys\nm = sys.modules['to' + 'rch']\nsetattr(m, 'rand', print)\n"),
                 "patch_harness");
  // Twins: configuration flags, environment variables; setattr on the module's own layers with a
  // computed name; an alias only read; vars() of an object.
  EXPECT_CLEAN(solution(kForward, kLoop,
                        "import os\ntorch.backends.cudnn.benchmark = True\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0'\n"));
  EXPECT_CLEAN(solution(kForward, kLoop,
                        "F = torch.nn.functional\ny = F.relu(torch.ones(2))\nclass Blocks(torch.nn.Module):\n"
                        "    def __init__(self):\n        super().__init__()\n"
                        "        for i in range(2):\n            setattr(self, f'conv{i}', torch.nn.Identity())\n"
                        "        vars(self)['note'] = 1\n"));
}

TEST(LintRules, FrameInspection) {
  EXPECT_REJECTS(solution(kForward, kLoop, "import inspect\nframes = inspect.stack()\n"), "frame_inspection");
  EXPECT_REJECTS(solution(kForward, kLoop, "import sys\nloc = sys._getframe(1).f_locals\n"), "frame_inspection");
  EXPECT_REJECTS(solution(kForward, kLoop, "from gc import get_objects as objs\nall_ = objs()\n"), "frame_inspection");
  // Hidden in an f-string field.
  EXPECT_REJECTS(solution(kForward, kLoop, "import gc\nmsg = f\"{len(gc.get_objects())}\"\n"), "frame_inspection");
  // Twins: gc.collect, inspect.signature, the words in a comment or a string.
  EXPECT_CLEAN(solution(kForward, kLoop,
                        "import gc, inspect\ngc.collect()\nsig = inspect.signature(print)\n"
                        "# inspect.stack() would be cheating\nnote = 'gc.get_objects()'\n"));
}

TEST(LintRules, GraderTamper) {
  EXPECT_REJECTS(solution(kForward, kLoop, "import os\nos.dup2(1, 4)\n"), "grader_tamper");
  EXPECT_REJECTS(solution(kForward, kLoop, "mem = open('/proc/self/mem', 'rb')\n"), "grader_tamper");
  std::string cpp = kLoop + "void forge(const char* b, size_t n) { ::write(4, b, n); }\n";
  EXPECT_REJECTS(solution(kForward, cpp), "grader_tamper");
  // The audit's ITIMER_PROF sampler disarmed or looked at from C++ (T23), a module walk (T22).
  for (const char* call : {"setitimer(ITIMER_PROF, &off, nullptr);", "getitimer(ITIMER_PROF, &now);",
                           "timer_create(CLOCK_PROCESS_CPUTIME_ID, nullptr, &t);",
                           "sigprocmask(SIG_BLOCK, &set, nullptr);", "dl_iterate_phdr(each, nullptr);"}) {
    std::string timer = kLoop + "#include <sys/time.h>\nvoid quiet() { " + call + " }\n";
    EXPECT_REJECTS(solution(kForward, timer), "grader_tamper");
  }
  // Twins: printing, a member write(), a function of its own named read, /proc/cpuinfo.
  std::string ok = kLoop +
                   "#include <fstream>\nstatic float read(const float* p) { return *p; }\n"
                   "struct Clock { long getitimer() const { return 0; } };\n"
                   "void log_it(const char* b) { std::ofstream f(\"log.txt\"); f.write(b, 1); printf(\"%f\", read(nullptr)); }\n";
  EXPECT_CLEAN(solution(kForward, ok, "info = open('/proc/cpuinfo').read()\n"));
}

TEST(LintRules, DynamicCode) {
  EXPECT_REJECTS(solution(kForward, kLoop, "exec('import gc')\n"), "dynamic_code");
  EXPECT_REJECTS(solution(kForward, kLoop, "name = 're' + 'lu'\nfn = getattr(torch, name)\n"), "dynamic_code");
  EXPECT_REJECTS(solution(kForward, kLoop, "import importlib\nm = importlib.import_module('gc')\n"), "dynamic_code");
  EXPECT_CLEAN(solution("    def forward(self, x):\n        w = getattr(self, 'weight', None)\n        return ext.f(x)\n",
                        kLoop,
                        "import re, importlib.util\npattern = re.compile('x')\n"
                        "HAS_TRITON = importlib.util.find_spec('triton') is not None\n"));
}

TEST(LintRules, RngSeed) {
  EXPECT_REJECTS(solution(kForward, kLoop, "torch.manual_seed(42)\n"), "rng_seed");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        torch.cuda.manual_seed_all(0)\n        return ext.f(x)\n"),
                 "rng_seed");
  // In __init__ it only warns (weights); under `if __name__ == "__main__":` it is not code that runs.
  LintReport init = lint(solution("    def setup(self):\n        pass\n" + kForward, kLoop,
                                  "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                                  "        torch.manual_seed(0)\n"));
  EXPECT_EQ(rejects(init), 0) << dump(init);
  EXPECT_EQ(count(init, "rng_seed", "warn"), 1) << dump(init);
  EXPECT_CLEAN(solution(kForward) + "if __name__ == \"__main__\":\n    torch.manual_seed(0)\n    print(ModelNew()(torch.rand(4)))\n");
}

TEST(LintRules, RegenerateInputs) {
  EXPECT_REJECTS(solution("    def forward(self, x):\n        own = torch.rand(x.shape)\n        return ext.f(own)\n"),
                 "regenerate_inputs");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        return ext.f(self._draw(x))\n"
                          "    def _draw(self, x):\n        return torch.empty_like(x).uniform_()\n"),
                 "regenerate_inputs");
  EXPECT_REJECTS(solution("    def build(self):\n        self.block = Block()\n"
                          "    def forward(self, x):\n        return self.block(x)\n",
                          kLoop,
                          "class Block(nn.Module):\n    def forward(self, x):\n        return ext.f(torch.rand_like(x))\n"),
                 "regenerate_inputs");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        return ext.f(get_inputs()[0])\n", kLoop,
                          "def get_inputs():\n    return [torch.rand(8)]\n"),
                 "regenerate_inputs");
  // Twins: random weights in __init__; the problem's get_inputs copied into the answer, not called.
  EXPECT_CLEAN(solution("    def make(self):\n        self.w = nn.Parameter(torch.randn(4, 4))\n" + kForward, kLoop,
                        "def get_inputs():\n    return [torch.rand(8)]\n\ndef get_init_inputs():\n    return []\n"));
}

TEST(LintRules, OutputCacheKeyedOnShapePointerIdentityContent) {
  EXPECT_REJECTS(solution("    def forward(self, x):\n        key = tuple(x.shape)\n        if key not in self.c:\n"
                          "            self.c[key] = ext.f(x)\n        return self.c[key]\n"),
                 "output_cache");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        if x.data_ptr() == self.ptr:\n            return self.out\n"
                          "        self.ptr = x.data_ptr()\n        self.out = ext.f(x)\n        return self.out\n"),
                 "output_cache");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        if x is self.last_x:\n            return self.last_y.clone()\n"
                          "        self.last_x, self.last_y = x, ext.f(x)\n        return self.last_y\n"),
                 "output_cache");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        h = hashlib.sha1(x.numpy().tobytes()).hexdigest()\n"
                          "        if h in CACHE:\n            return CACHE[h]\n        CACHE[h] = y = ext.f(x)\n"
                          "        return y\n",
                          kLoop, "import hashlib\nCACHE = {}\n"),
                 "output_cache");
  EXPECT_REJECTS(solution(kForward + "    @functools.lru_cache(maxsize=None)\n    def run(self, x):\n        return ext.f(x)\n",
                          kLoop, "import functools\n"),
                 "output_cache");
  std::string cpp_cache = kLoop + R"CPP(
#include <unordered_map>
static std::unordered_map<const void*, torch::Tensor> cache;
torch::Tensor g(torch::Tensor x) {
    auto it = cache.find(x.data_ptr());
    if (it != cache.end()) return it->second;
    auto y = f(x);
    cache[x.data_ptr()] = y;
    return y;
}
)CPP";
  EXPECT_REJECTS(solution(kForward, cpp_cache), "output_cache");
}

TEST(LintRules, OutputCacheTwinsStayClean) {
  // A transposed weight kept across calls (keyed on the weight's pointer and shape).
  EXPECT_CLEAN(solution("    def wt(self):\n        key = (self.w.data_ptr(), tuple(self.w.shape))\n"
                        "        if self._key != key:\n            self._wt, self._key = self.w.t().contiguous(), key\n"
                        "        return self._wt\n"
                        "    def forward(self, x):\n        return ext.f(x) + ext.f(self.wt())\n"));
  // An output buffer reused across calls, written by the kernel on every call.
  EXPECT_CLEAN(solution("    def forward(self, x):\n        if self.buf is None or self.buf.shape != x.shape:\n"
                        "            self.buf = torch.empty_like(x)\n        ext.f_out(x, self.buf)\n        return self.buf\n"));
  // A static workspace in C++ that is never returned.
  std::string cpp = kLoop + "static torch::Tensor workspace;\ntorch::Tensor g(torch::Tensor x) {\n"
                            "    if (!workspace.defined()) workspace = torch::empty_like(x);\n    return f(x);\n}\n";
  EXPECT_CLEAN(solution(kForward, cpp));
}

TEST(LintRules, Threads) {
  EXPECT_REJECTS(solution("    def forward(self, x):\n        y = torch.zeros_like(x)\n"
                          "        threading.Thread(target=lambda: y.copy_(ext.f(x))).start()\n        return y\n",
                          kLoop, "import threading\n"),
                 "threads");
  EXPECT_REJECTS(solution(kForward, kLoop, "from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(2)\n"),
                 "threads");
  std::string detached = kLoop + "#include <thread>\nvoid later(torch::Tensor y) { std::thread([y]() mutable { y.zero_(); }).detach(); }\n";
  EXPECT_REJECTS(solution(kForward, detached), "threads");
  // Twins: threads joined before returning (a warning), at::parallel_for (nothing).
  std::string joined = kLoop + "#include <thread>\nvoid two(float* p) { std::thread t([p]() { p[0] = 1; }); t.join(); }\n";
  LintReport j = lint(solution(kForward, joined));
  EXPECT_EQ(rejects(j), 0) << dump(j);
  EXPECT_EQ(count(j, "threads", "warn"), 1) << dump(j);
  // T25: a thread that widens its CPU affinity past the budget kbv gave it and its baselines.
  std::string wide = kLoop + "#include <sched.h>\nvoid all() { cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); "
                             "sched_setaffinity(0, sizeof s, &s); }\n";
  EXPECT_REJECTS(solution(kForward, wide), "cpu_affinity");
  std::string pwide = kLoop + "#include <pthread.h>\nvoid all(cpu_set_t* s) { pthread_setaffinity_np(pthread_self(), "
                              "sizeof *s, s); }\n";
  EXPECT_REJECTS(solution(kForward, pwide), "cpu_affinity");
  std::string reads = kLoop + "#include <sched.h>\nint n() { cpu_set_t s; sched_getaffinity(0, sizeof s, &s); "
                              "return CPU_COUNT(&s); }\n";
  EXPECT_EQ(count(lint(solution(kForward, reads)), "cpu_affinity", "reject"), 0) << "reading it is harmless";
  std::string pf = kLoop + "void pf(float* p, int64_t n) { at::parallel_for(0, n, 1024, [&](int64_t b, int64_t e) { "
                           "for (int64_t i = b; i < e; ++i) p[i] = 0; }); }\n";
  LintReport q = lint(solution(kForward, pf));
  EXPECT_TRUE(q.findings.empty()) << dump(q);
}

const std::string kCuda = R"CU(
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void k(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor f(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    STREAM_SETUP
    k<<<(n + 255) / 256, 256, 0, STREAM>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    STREAM_JOIN
    return y;
}
)CU";

std::string cuda(const std::string& setup, const std::string& stream, const std::string& join) {
  std::string s = kCuda;
  s.replace(s.find("STREAM_SETUP"), 12, setup);
  s.replace(s.find("STREAM>>>"), 6, stream);
  s.replace(s.find("STREAM_JOIN"), 11, join);
  return s;
}

TEST(LintRules, SideStream) {
  std::string side = "static cudaStream_t s = nullptr; if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);";
  EXPECT_REJECTS(solution(kForward, cuda(side, "s", "")), "side_stream");
  EXPECT_REJECTS(solution(kForward, cuda("auto s = at::cuda::getStreamFromPool();", "s", "")), "side_stream");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        s = torch.cuda.Stream()\n        with torch.cuda.stream(s):\n"
                          "            y = ext.f(x)\n        return y\n"),
                 "side_stream");
  // Twins: the caller's stream waits for the side stream (a warning); the current stream (nothing).
  std::string waits = "cudaStream_t caller = at::cuda::getCurrentCUDAStream(); " + side +
                      " cudaEvent_t e; cudaEventCreate(&e);";
  LintReport w = lint(solution(kForward, cuda(waits, "s", "cudaEventRecord(e, s); cudaStreamWaitEvent(caller, e, 0);")));
  EXPECT_EQ(rejects(w), 0) << dump(w);
  EXPECT_EQ(count(w, "side_stream", "warn"), 1) << dump(w);
  LintReport p = lint(solution("    def forward(self, x):\n        s = torch.cuda.Stream()\n        with torch.cuda.stream(s):\n"
                               "            y = ext.f(x)\n        torch.cuda.current_stream().wait_stream(s)\n        return y\n"));
  EXPECT_EQ(rejects(p), 0) << dump(p);
  LintReport c = lint(solution(kForward, cuda("", "at::cuda::getCurrentCUDAStream()", "")));
  EXPECT_TRUE(c.findings.empty()) << dump(c);
}

TEST(LintRules, TensorSubclass) {
  EXPECT_REJECTS(solution(kForward, kLoop, "class Lazy(torch.Tensor):\n    pass\n"), "tensor_subclass");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        return ext.f(x).as_subclass(Out)\n"), "tensor_subclass");
  EXPECT_REJECTS(solution(kForward, kLoop, "class W:\n    @classmethod\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
                                           "        return f(*a)\n"),
                 "tensor_subclass");
  // Twins: an autograd.Function, an nn.Module.
  EXPECT_CLEAN(solution("    def forward(self, x):\n        return Relu.apply(x)\n", kLoop,
                        "class Relu(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                        "        return ext.f(x)\n"));
}

TEST(LintRules, ReferenceModel) {
  std::string model = "class Model(nn.Module):\n    def __init__(self):\n        super(Model, self).__init__()\n"
                      "    def forward(self, x):\n        return torch.relu(x)\n";
  std::string inherit = solution(kForward, kLoop, model);
  inherit.replace(inherit.find("class ModelNew(nn.Module)"), 25, "class ModelNew(Model)");
  EXPECT_REJECTS(inherit, "reference_model");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        return ext.f(Model()(x))\n", kLoop, model), "reference_model");
  EXPECT_REJECTS(solution(kForward, kLoop, "from reference import Model\n"), "reference_model");
  // Twin: the reference copied into the answer, unused.
  EXPECT_CLEAN(solution(kForward, kLoop, model));
}

TEST(LintRules, TryFallback) {
  EXPECT_REJECTS(solution("    def forward(self, x):\n        try:\n            return ext.f(x)\n"
                          "        except Exception:\n            return torch.relu(x)\n"),
                 "try_fallback");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        try:\n            y = ext.f(x)\n        except:\n"
                          "            y = F.relu(x)\n        return y\n",
                          kLoop, "import torch.nn.functional as F\n"),
                 "try_fallback");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        try:\n            return ext.f(x)\n"
                          "        except RuntimeError:\n            return x.clamp(min=0)\n"),
                 "try_fallback");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        try:\n            return ext.f(x)\n"
                          "        except RuntimeError:\n            return self.slow(x)\n"
                          "    def slow(self, x):\n        return torch.where(x > 0, x, torch.zeros_like(x))\n"),
                 "try_fallback");
  // Twins: a guarded import, a handler that re-raises, a harmless pass, another kernel of its own.
  EXPECT_CLEAN(solution("    def forward(self, x):\n        try:\n            return ext.f(x)\n"
                        "        except RuntimeError:\n            return self.other(x)\n"
                        "    def other(self, x):\n        return ext.f(x.contiguous())\n"));
  EXPECT_CLEAN(solution("    def forward(self, x):\n        try:\n            return ext.f(x)\n"
                        "        except RuntimeError as e:\n            raise RuntimeError('relu kernel failed') from e\n"
                        "    def hook(self):\n        pass\n",
                        kLoop, "try:\n    import ninja\nexcept ImportError:\n    pass\n"));
}

TEST(LintRules, NoKernel) {
  std::string plain = "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                      "        return torch.relu(x)\n";
  EXPECT_REJECTS(plain, "no_kernel_defined");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        return torch.relu(x)\n"), "kernel_not_called");
  EXPECT_REJECTS(solution("    def forward(self, x):\n        return x\n"), "kernel_not_called");
  // No ModelNew at all: the runtime says so, not the linter.
  LintReport none = lint("import torch\nclass ModelNeW(torch.nn.Module):\n    def forward(self, x):\n        return x\n");
  EXPECT_EQ(rejects(none), 0) << dump(none);
}

TEST(LintRules, KernelReachedThroughHelpersStaysClean) {
  // Mixing: a custom kernel plus torch ops in forward (KernelBench allows it).
  EXPECT_CLEAN(solution("    def forward(self, x):\n        y = ext.f(x @ x.t())\n        return torch.nn.functional.gelu(y) * 2\n"));
  // Through a module-level helper, a method, a stored handle, a lambda, a submodule in a ModuleList.
  EXPECT_CLEAN(solution("    def forward(self, x):\n        return relu(x)\n", kLoop, "def relu(x):\n    return ext.f(x)\n"));
  EXPECT_CLEAN(solution("    def run(self, x):\n        return ext.f(x)\n    def forward(self, x):\n        return self.run(x)\n"));
  EXPECT_CLEAN(solution("    def bind(self):\n        self.k = ext.f\n        self.g = lambda t: ext.f(t)\n"
                        "    def forward(self, x):\n        return self.g(self.k(x))\n"));
  EXPECT_CLEAN(solution("    def build(self):\n        self.layers = nn.ModuleList([Layer() for _ in range(3)])\n"
                        "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x\n",
                        kLoop, "class Layer(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n"));
  // A loader called inside a function, its module cached in a global.
  std::string lazy = "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
                     "_ext = None\nsrc = r\"\"\"" + kLoop + "\"\"\"\n"
                     "def get_ext():\n    global _ext\n    if _ext is None:\n"
                     "        _ext = load_inline(name='t', cpp_sources=src, functions=['f'])\n    return _ext\n"
                     "class ModelNew(nn.Module):\n    def forward(self, x):\n        return get_ext().f(x)\n";
  LintReport r = lint(lazy);
  EXPECT_EQ(rejects(r), 0) << dump(r);
  EXPECT_EQ(r.units.size(), 1u);
  // A Triton kernel.
  std::string triton = "import torch, triton\nimport triton.language as tl\nimport torch.nn as nn\n"
                       "@triton.jit\ndef relu_kernel(x, y, n, B: tl.constexpr):\n    pass\n"
                       "class ModelNew(nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
                       "        relu_kernel[(1,)](x, y, x.numel(), B=1024)\n        return y\n";
  EXPECT_CLEAN(triton);
}

TEST(LintRules, AtenComputeInTheWrapper) {
  std::string relu = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) {\n"
                     "    TORCH_CHECK(x.is_cpu(), \"cpu\");\n    return at::relu(x.contiguous());\n}\n";
  EXPECT_REJECTS(solution(kForward, relu), "aten_compute");
  EXPECT_REJECTS(solution(kForward, "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor a) { return torch::matmul(a, a); }\n"),
                 "aten_compute");
  EXPECT_REJECTS(solution(kForward, "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor a) { return a.clamp_min(0); }\n"),
                 "aten_compute");
  EXPECT_REJECTS(solution(kForward, "#include <torch/extension.h>\nusing namespace at;\nTensor f(Tensor a) { return relu(a); }\n"),
                 "aten_compute");
  EXPECT_REJECTS(solution(kForward, "#include <torch/extension.h>\n#define WORK(t) at::native::relu(t)\n"
                                    "torch::Tensor f(torch::Tensor a) { return WORK(a); }\n"),
                 "aten_compute");
  // Through a helper the exported function calls.
  EXPECT_REJECTS(solution(kForward, "#include <torch/extension.h>\nstatic torch::Tensor impl(torch::Tensor a) { return a.sum(1); }\n"
                                    "torch::Tensor f(torch::Tensor a) { return impl(a.contiguous()); }\n"),
                 "aten_compute");
  // Line of the evidence: the at::relu line in the .py file.
  LintReport r = lint(solution(kForward, relu));
  ASSERT_EQ(count(r, "aten_compute"), 1) << dump(r);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.code, "return at::relu(x.contiguous());");
  EXPECT_EQ(f.line, 8) << dump(r);
  EXPECT_EQ(f.cheat, "T11");
}

TEST(LintRules, AtenUtilitiesAndMixingStayUnrejected) {
  // Allocation, shape, pointer and stream calls next to a kernel: nothing.
  LintReport c = lint(solution(kForward, cuda("", "at::cuda::getCurrentCUDAStream()", "")));
  EXPECT_TRUE(c.findings.empty()) << dump(c);
  // A kernel next to an ATen op: a warning, not a rejection.
  std::string mixed = kCuda;
  mixed.replace(mixed.find("STREAM_SETUP"), 12, "");
  mixed.replace(mixed.find("STREAM>>>"), 6, "0");
  mixed.replace(mixed.find("STREAM_JOIN"), 11, "y = at::matmul(y, y);");
  LintReport m = lint(solution(kForward, mixed));
  EXPECT_EQ(rejects(m), 0) << dump(m);
  EXPECT_EQ(count(m, "aten_compute", "warn"), 1) << dump(m);
  // A PYBIND11_MODULE naming the functions instead of functions=[...].
  std::string pb = kLoop + "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"f\", &f, \"relu\"); }\n";
  LintReport p = lint(solution(kForward, pb));
  EXPECT_TRUE(p.findings.empty()) << dump(p);
}

TEST(LintRules, PrecisionDowngradeOnlyWarns) {
  std::string half = kLoop + "#include <cuda_fp16.h>\n__global__ void h(__half* p) { p[0] = __float2half(1.0f); }\n";
  LintReport r = lint(solution(kForward, half));
  EXPECT_EQ(rejects(r), 0) << dump(r);
  EXPECT_EQ(count(r, "precision_downgrade", "warn"), 1) << dump(r);
  LintReport p = lint(solution("    def forward(self, x):\n        return ext.f(x.half()).float()\n"));
  EXPECT_EQ(count(p, "precision_downgrade", "warn"), 1) << dump(p);
  std::string flags = solution(kForward);
  flags.replace(flags.find("functions=[\"f\"]"), 15, "functions=[\"f\"], extra_cuda_cflags=[\"-O3\", \"--use_fast_math\"]");
  LintReport f = lint(flags);
  EXPECT_EQ(count(f, "precision_downgrade", "warn"), 1) << dump(f);
  EXPECT_EQ(count(lint(solution(kForward, kLoop, "torch.backends.cuda.matmul.allow_tf32 = True\n")), "precision_downgrade", "warn"), 1);
}

// In a bf16 or fp16 evaluation, computing in a 16-bit type (or in TF32) is no downgrade; fp8 and
// fast-math flags still are.
TEST(LintRules, PrecisionDowngradeIsRelativeToTheEvaluatedPrecision) {
  auto at = [](const std::string& code, const std::string& precision) {
    LintOptions o;
    o.file = "sol.py";
    o.precision = precision;
    return lint_solution(code, o);
  };
  std::string bf16 = kLoop + "#include <cuda_bf16.h>\n__global__ void h(__nv_bfloat16* p) { p[0] = __float2bfloat16(1.0f); }\n";
  EXPECT_EQ(count(at(solution(kForward, bf16), "fp32"), "precision_downgrade", "warn"), 1);
  LintReport same = at(solution(kForward, bf16), "bf16");
  EXPECT_EQ(count(same, "precision_downgrade", "warn"), 0) << dump(same);
  EXPECT_EQ(count(at(solution("    def forward(self, x):\n        return ext.f(x.half())\n"), "fp16"),
                  "precision_downgrade", "warn"), 0);
  LintReport fp8 = at(solution("    def forward(self, x):\n        return ext.f(x.to(torch.float8_e4m3fn))\n"), "bf16");
  ASSERT_EQ(count(fp8, "precision_downgrade", "warn"), 1) << dump(fp8);
  EXPECT_NE(fp8.findings[0].message.find("bf16 problems are checked at bf16 tolerance"), std::string::npos)
      << fp8.findings[0].message;
  EXPECT_EQ(count(at(solution(kForward, kLoop, "torch.backends.cuda.matmul.allow_tf32 = True\n"), "bf16"),
                  "precision_downgrade", "warn"), 0);
  std::string flags = solution(kForward);
  flags.replace(flags.find("functions=[\"f\"]"), 15, "functions=[\"f\"], extra_cuda_cflags=[\"--use_fast_math\"]");
  EXPECT_EQ(count(at(flags, "bf16"), "precision_downgrade", "warn"), 1);
  EXPECT_TRUE(below_precision("wmma", "fp32"));
  EXPECT_FALSE(below_precision("kHalf", "bf16"));
  EXPECT_FALSE(below_precision("mma .bf16", "fp16"));
  EXPECT_TRUE(below_precision("mma .e4m3", "bf16"));
  EXPECT_TRUE(below_precision("__nv_fp8_e5m2", "fp16"));
}

TEST(LintSources, RecoveredFromNamesConcatenationsFStringsJoinAndFormat) {
  std::string head = "N = 256\nhdr = '#include <torch/extension.h>\\n'\n";
  std::string code =
      "import torch\nimport torch.nn as nn\nimport textwrap\nfrom torch.utils.cpp_extension import load_inline\n" + head +
      "body = f'''\ntorch::Tensor f(torch::Tensor x) {{\n    return at::relu(x);  // N={N}\n}}\n'''\n"
      "decl = 'torch::Tensor {name}(torch::Tensor x);'.format(name='f')\n"
      "src = '\\n'.join([hdr, textwrap.dedent(body)])\nsrc += '// end\\n'\n"
      "ext = load_inline(name='t', cpp_sources=[decl, src], functions=['f'])\n"
      "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n";
  LintReport r = lint(code);
  EXPECT_EQ(r.units.size(), 2u) << dump(r);
  EXPECT_EQ(count(r, "sources_unresolved", "warn"), 0) << dump(r);
  ASSERT_EQ(count(r, "aten_compute"), 1) << dump(r);
  for (const auto& f : r.findings)
    if (f.rule == "aten_compute") {
      EXPECT_EQ(f.line, 9) << "the line of at::relu in the f-string";
    }
}

TEST(LintSources, RuntimeBuiltSourcesAreSaidSo) {
  std::string code = "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
                     "def make():\n    return open('k.cpp').read()\n"
                     "block = torch.cuda.get_device_properties(0).max_threads_per_block\n"
                     "src = f'#define B {block}\\n' + make()\n"
                     "ext = load_inline(name='t', cpp_sources=src, functions=['f'])\n"
                     "part = load_inline(name='u', cpp_sources=f'#define B {block}\\nint g() {{ return B; }}', functions=['g'])\n"
                     "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n";
  LintReport r = lint(code);
  EXPECT_EQ(count(r, "sources_unresolved", "warn"), 2) << dump(r);
  EXPECT_EQ(rejects(r), 0) << dump(r);
  EXPECT_EQ(r.units.size(), 1u) << "the partly resolved f-string is still read";
}

TEST(LintSources, CyclicNamesEndAsUnresolved) {
  LintReport r = lint("import torch\nfrom torch.utils.cpp_extension import load_inline\na = b\nb = a + 'x'\n"
                      "ext = load_inline(name='t', cpp_sources=a, functions=['f'])\n"
                      "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n");
  EXPECT_EQ(count(r, "sources_unresolved", "warn"), 1) << dump(r);
  EXPECT_EQ(rejects(r), 0) << dump(r);
}

TEST(LintSources, LoadReadsFilesNextToTheSolution) {
  fs::path dir = fs::temp_directory_path() / ("kbv-lint-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "#include <torch/extension.h>\n\ntorch::Tensor f(torch::Tensor x) {\n  return torch::relu(x);\n}\n";
  LintOptions o;
  o.file = (dir / "sol.py").string();
  o.base_dir = dir;
  std::string code = "import torch\nfrom torch.utils.cpp_extension import load\n"
                     "ext = load(name='t', sources=['k.cpp', 'missing.cu'])\n"
                     "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n";
  LintReport r = lint_solution(code, o);
  ASSERT_EQ(count(r, "aten_compute"), 1) << dump(r);
  EXPECT_EQ(r.findings[0].file, (dir / "k.cpp").string());
  EXPECT_EQ(r.findings[0].line, 4);
  EXPECT_EQ(r.findings[0].code, "return torch::relu(x);");
  EXPECT_EQ(count(r, "sources_unresolved", "warn"), 1) << "missing.cu: " << dump(r);
  fs::remove_all(dir);
}

TEST(LintPolicy, LenientTurnsRejectionsIntoWarnings) {
  std::string cheat = solution("    def forward(self, x):\n        return torch.relu(x)\n");
  LintReport strict = lint(cheat);
  EXPECT_TRUE(strict.rejected());
  EXPECT_NE(strict.rejection_message().find("sol.py:"), std::string::npos);
  EXPECT_NE(strict.rejection_message().find("kernel_not_called (T11)"), std::string::npos) << strict.rejection_message();
  LintReport lenient = lint(cheat, Policy::lenient);
  EXPECT_FALSE(lenient.rejected());
  EXPECT_EQ(count(lenient, "kernel_not_called", "warn"), 1);
  nlohmann::json j = lenient.to_json();
  EXPECT_EQ(j["policy"], "lenient");
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["cheat"], "T11");
  EXPECT_EQ(j["findings"][0]["evidence"].get<std::string>().rfind("sol.py:", 0), 0u);
}

TEST(LintPolicy, BadInputIsAFindingNotACrash) {
  LintReport r = lint("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return 'unterminated\n");
  ASSERT_EQ(count(r, "unparsable", "warn"), 1) << dump(r);
  for (const auto& f : r.findings)
    if (f.rule == "unparsable") {
      EXPECT_EQ(f.line, 4);
    }
  for (std::string junk : {"", "\x00\xff", "def (", ")))]]]", "class :\n  def\n", "'''", "f'{", "f'{x!'", "\\\n"})
    EXPECT_NO_THROW(lint(junk));
}

TEST(LintPolicy, EveryRuleIsDocumented) {
  for (const auto& r : lint_rules()) {
    EXPECT_NE(std::string(r.what), "");
    EXPECT_TRUE(std::string(r.severity) == "reject" || std::string(r.severity) == "warn");
  }
  kbv::FileText doc = kbv::read_file(std::string(KBV_SOURCE_DIR) + "/docs/POLICY.md");
  ASSERT_TRUE(doc.ok) << doc.error;
  for (const auto& r : lint_rules()) EXPECT_NE(doc.text.find(std::string("`") + r.id + "`"), std::string::npos) << r.id;
}

}  // namespace lint_rules_test
}  // namespace kbv
