// Rules over the C++/CUDA sources a candidate compiles (lint/rules.h, cpp_rules). The analysis they
// read (functions, calls, launches): lint/cpp_analysis.cc.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lint/cpp_analysis.h"
#include "lint/ops.h"

namespace kbv::cpprules {
namespace {

// ATen/torch functions that allocate or describe rather than compute.
const std::set<std::string> kAtenAllowed = {
    "empty",       "empty_like",   "empty_strided", "zeros",        "zeros_like",      "ones",
    "ones_like",   "full",         "full_like",     "from_blob",    "tensor",          "scalar_tensor",
    "arange",      "get_num_threads", "set_num_threads", "get_num_interop_threads", "parallel_for",
    "parallel_reduce", "in_parallel_region", "get_thread_num", "device", "dtype",   "requires_grad",
    "nullopt",     "make_optional", "manual_seed",  "get_default_dtype", "empty_cpu", "empty_cuda",
    "scalar_type", "layout",       "globalContext", "zero_", "fill_"};

const std::set<std::string> kTamperCalls = {
    "dup",   "dup2",   "dup3",     "pipe",   "pipe2", "ptrace", "process_vm_readv", "process_vm_writev",
    "prctl", "mprotect", "syscall", "dlsym", "kill",  "tgkill", "sigaction",        "signal",
    "write", "read",   "pread",    "pwrite", "close", "open",   "openat",           "fcntl",
    "ioctl",
    // The audit's profiling timer and the process's signal mask (T23: disarming or detecting the
    // sampler), and walking the loaded modules to find a slot to rewrite (T22).
    "setitimer", "getitimer", "timer_create", "timer_settime", "timer_gettime", "timer_delete",
    "sigprocmask", "pthread_sigmask", "dl_iterate_phdr"};

const std::set<std::string> kProcessCalls = {"fork", "vfork",  "system", "popen",  "posix_spawn", "posix_spawnp",
                                             "execv", "execve", "execvp", "execl", "execlp",      "execle"};

const std::set<std::string> kStreamCreate = {"cudaStreamCreate", "cudaStreamCreateWithFlags",
                                             "cudaStreamCreateWithPriority", "cuStreamCreate",
                                             "cuStreamCreateWithPriority", "getStreamFromPool",
                                             "getStreamFromExternal"};

const std::set<std::string> kSyncCalls = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                                          "cuStreamSynchronize", "cuCtxSynchronize", "synchronize"};

const std::set<std::string> kPrecisionIds = {
    "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162", "__nv_fp8_e4m3", "__nv_fp8_e5m2", "kHalf",
    "kBFloat16", "kFloat16", "__float2half", "__float2half_rn", "__float2bfloat16", "__float2bfloat16_rn",
    "__floats2half2_rn", "__float22half2_rn", "__float_to_tf32", "wmma", "CUBLAS_TF32_TENSOR_OP_MATH",
    "CUBLAS_COMPUTE_32F_FAST_TF32", "CUBLAS_COMPUTE_32F_FAST_16F", "CUBLAS_COMPUTE_32F_FAST_16BF",
    "CUBLAS_TENSOR_OP_MATH", "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION"};

}  // namespace

bool CppAnalysis::using_namespace_aten(int u) const {
  const Tokens& t = units_[u].lex.tokens;
  for (size_t k = 0; k + 2 < t.size(); ++k)
    if (is_id(t[k], "using") && is_id(t[k + 1], "namespace") && (is_id(t[k + 2], "at") || is_id(t[k + 2], "torch")))
      return true;
  return false;
}

// "at::relu" for an ATen/torch compute call, "" for anything else.
std::string CppAnalysis::aten_compute(const Call& c, bool using_aten) const {
  const std::string& name = c.qual.back();
  if (c.member) return is_compute_method(name) ? "." + name + "()" : "";
  std::string joined;
  for (const auto& q : c.qual) joined += (joined.empty() ? "" : "::") + q;
  if (c.qual.size() == 1) {
    if (using_aten && !names_.count(name) && is_compute_method(name)) return name;
    if (name.rfind("cublas", 0) == 0 || name.rfind("cudnn", 0) == 0) {
      std::string l;
      for (char ch : name) l += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      for (const char* op : {"gemm", "gemv", "matmul", "dot", "axpy", "forward", "convolution", "softmax",
                             "activation", "reduce", "trsm", "syrk"})
        if (l.find(op) != std::string::npos && l.find("create") == std::string::npos &&
            l.find("destroy") == std::string::npos && l.find("desc") == std::string::npos &&
            l.find("getworkspace") == std::string::npos && l.find("algo") == std::string::npos)
          return name;
    }
    return "";
  }
  if (c.qual[0] != "at" && c.qual[0] != "torch") return "";
  for (const auto& q : c.qual)
    if (q == "blas" || q == "native" || q == "_ops" || q == "functional") return joined;
  for (const auto& q : c.qual)
    if (q == "cuda" || q == "indexing" || q == "detail" || q == "autograd" || q == "jit" || q == "utils" ||
        q == "nn" || q == "cpu" || q == "internal" || q == "impl")
      return q == "cpu" && is_compute_method(name) ? joined : "";
  if (name.empty() || std::isupper(static_cast<unsigned char>(name[0]))) return "";
  for (char ch : name)
    if (std::isupper(static_cast<unsigned char>(ch))) return "";  // camelCase: utilities (checkDim, toString)
  if (kAtenAllowed.count(name)) return "";
  return joined;
}

void CppAnalysis::aten_rule() {
  // Entry points: exported functions, else every host function.
  std::set<std::string> entries = s_.exported;
  for (const Fn& f : fns_) {
    if (f.name == "PYBIND11_MODULE" || f.name == "TORCH_LIBRARY" || f.name == "TORCH_LIBRARY_IMPL" ||
        f.name == "TORCH_LIBRARY_FRAGMENT") {
      entries.insert(f.name);
      const Tokens& t = f.body;
      for (size_t k = 0; k + 3 < t.size(); ++k)  // m.def("name", &fn) / m.impl("name", fn) / TORCH_FN(fn)
        if ((is_id(t[k], "def") || is_id(t[k], "impl")) && is_p(t[k + 1], "(") && t[k + 2].kind == CppKind::String) {
          size_t j = k + 3;
          if (j < t.size() && is_p(t[j], ",")) ++j;
          if (j < t.size() && is_p(t[j], "&")) ++j;
          if (j + 2 < t.size() && is_id(t[j], "TORCH_FN") && is_p(t[j + 1], "(")) j += 2;
          if (j < t.size() && t[j].kind == CppKind::Ident) entries.insert(t[j].text);
        }
    }
  }
  bool any_defined = false;
  for (const auto& e : entries) any_defined = any_defined || names_.count(e);
  if (!any_defined)
    for (const Fn& f : fns_)
      if (!f.kernel && !f.device) entries.insert(f.name);

  for (size_t i = 0; i < fns_.size(); ++i) {
    const Fn& entry = fns_[i];
    if (!entries.count(entry.name) || entry.kernel || entry.device) continue;
    // Everything it reaches through calls to functions defined in the sources.
    std::vector<size_t> closure = {i};
    std::set<std::string> seen = {entry.name};
    bool own = false;
    for (size_t q = 0; q < closure.size(); ++q) {
      const Fn& f = fns_[closure[q]];
      own = own || f.own_work;
      std::vector<std::string> next = f.launched;
      for (const Call& c : f.calls)
        if (!c.member && names_.count(c.qual.back())) next.push_back(c.qual.back());
      for (const auto& name : next)
        for (size_t j = 0; j < fns_.size(); ++j)
          if (fns_[j].name == name && seen.insert(name).second) closure.push_back(j);
    }
    std::vector<std::pair<const Fn*, const Call*>> aten;
    for (size_t q : closure) {
      const Fn& f = fns_[q];
      if (f.kernel || f.device) continue;
      bool using_aten = using_namespace_aten(f.unit);
      for (const Call& c : f.calls)
        if (!aten_compute(c, using_aten).empty()) aten.push_back({&f, &c});
    }
    if (aten.empty()) continue;
    std::string names;
    std::set<std::string> listed;
    for (auto [f, c] : aten) {
      std::string a = aten_compute(*c, using_namespace_aten(f->unit));
      if (listed.size() < 4 && listed.insert(a).second) names += (names.empty() ? "" : ", ") + a;
    }
    const auto& [f0, c0] = aten.front();
    if (!own) {
      report("aten_compute", "reject", "T11", f0->unit, c0->line,
             fmt::format("{}() gets its result from {} and runs no kernel or loop of its own: the library "
                         "(ATen, cuBLAS, cuDNN) does the work. Write the computation as a kernel; allocation "
                         "(torch::empty...), shape and pointer calls are fine",
                         entry.name, names));
    } else {
      report("aten_compute", "warn", "T11", f0->unit, c0->line,
             fmt::format("{}() computes part of its result with {} next to its own kernel/loop: allowed "
                         "(KernelBench allows mixing)",
                         entry.name, names));
    }
  }
}

bool CppAnalysis::plain_call(const Tokens& t, int k) {  // name( not as a member, not std::
  if (k + 1 >= static_cast<int>(t.size()) || !is_p(t[k + 1], "(")) return false;
  if (k >= 1 && (is_p(t[k - 1], ".") || is_p(t[k - 1], "->"))) return false;
  if (k >= 2 && is_p(t[k - 1], "::") && t[k - 2].kind == CppKind::Ident) return false;
  return true;
}

void CppAnalysis::thread_rule() {
  int thread_unit = -1, thread_line = 0, detach_unit = -1, detach_line = 0;
  std::string thread_what;
  each_token([&](int u, const Tokens& t, int k) {
    const CppToken& x = t[k];
    if (x.kind != CppKind::Ident) return;
    bool qualified_std = k >= 2 && is_p(t[k - 1], "::") && (is_id(t[k - 2], "std") || is_id(t[k - 2], "boost"));
    if ((qualified_std && (x.text == "thread" || x.text == "jthread" || x.text == "async")) ||
        (x.text == "pthread_create" && plain_call(t, k))) {
      if (thread_unit < 0) thread_unit = u, thread_line = x.line, thread_what = x.text;
    }
    if ((x.text == "detach" && k >= 1 && (is_p(t[k - 1], ".") || is_p(t[k - 1], "->"))) ||
        (x.text == "pthread_detach" && plain_call(t, k))) {
      if (detach_unit < 0) detach_unit = u, detach_line = x.line;
    }
    if (kProcessCalls.count(x.text) && plain_call(t, k) && !names_.count(x.text))
      report("threads", "reject", "T2", u, x.line,
             fmt::format("{}() starts another process: work may go on after the call returns", x.text));
    if ((x.text == "sched_setaffinity" || x.text == "pthread_setaffinity_np" ||
         x.text == "pthread_attr_setaffinity_np") &&
        plain_call(t, k) && !names_.count(x.text))
      report("cpu_affinity", "reject", "T25", u, x.line,
             fmt::format("{}() changes the CPUs a thread may run on: kbv gives the candidate and its baselines the "
                         "same CPUs (--cpu-threads), and more of them would time a scheduler, not a kernel",
                         x.text));
    if ((x.text == "cudaLaunchHostFunc" || x.text == "cudaStreamAddCallback") && plain_call(t, k))
      report("threads", "reject", "T2", u, x.line,
             fmt::format("{}() runs host code later, on the driver's thread, after the call returns", x.text));
  });
  if (detach_unit >= 0)
    report("threads", "reject", "T2", detach_unit, detach_line,
           "a detached thread can finish the work after the call has returned");
  else if (thread_unit >= 0)
    report("threads", "warn", "T2", thread_unit, thread_line,
           fmt::format("starts threads (std::{}): allowed when they are joined before the call returns", thread_what));
}

void CppAnalysis::stream_rule() {
  std::set<std::string> callers = {"0", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamPerThread"};
  int create_unit = -1, create_line = 0;
  std::string create;
  bool joined = false;
  for (size_t u = 0; u < units_.size(); ++u) {
    const Tokens& t = units_[u].lex.tokens;
    for (int k = 0; k < static_cast<int>(t.size()); ++k) {
      const CppToken& x = t[k];
      if (x.kind != CppKind::Ident) continue;
      if (x.text == "getCurrentCUDAStream" || x.text == "getDefaultCUDAStream") {
        int j = k;  // the variable this statement declares, if any: "name = ...getCurrentCUDAStream"
        while (j > 0 && !is_p(t[j], ";") && !is_p(t[j], "{") && !is_p(t[j], "}")) --j;
        for (int m = j; m < k; ++m)
          if (is_p(t[m + 1], "=") && t[m].kind == CppKind::Ident) callers.insert(t[m].text);
      }
      if (kStreamCreate.count(x.text) && create_unit < 0) {
        create_unit = static_cast<int>(u);
        create_line = x.line;
        create = x.text;
      }
      if (kSyncCalls.count(x.text) && k + 1 < static_cast<int>(t.size()) && is_p(t[k + 1], "(")) joined = true;
      if ((x.text == "cudaStreamWaitEvent" || x.text == "cuStreamWaitEvent") && k + 2 < static_cast<int>(t.size())) {
        for (int j = k + 2; j < static_cast<int>(t.size()) && !is_p(t[j], ","); ++j)
          if (callers.count(t[j].text) || t[j].text == "getCurrentCUDAStream" || t[j].text == "getDefaultCUDAStream")
            joined = true;
      }
    }
  }
  if (create_unit < 0) return;
  if (joined)
    report("side_stream", "warn", "T1", create_unit, create_line,
           fmt::format("{}() makes a stream of its own; the caller's stream (or the host) waits for it, so the "
                       "timed stream covers its work",
                       create));
  else
    report("side_stream", "reject", "T1", create_unit, create_line,
           fmt::format("{}() makes a stream of its own and nothing makes the caller's stream wait for it: the "
                       "work runs outside the timed stream. Launch on at::cuda::getCurrentCUDAStream(), or make "
                       "the caller's stream wait (cudaStreamWaitEvent on it)",
                       create));
}

void CppAnalysis::tamper_rule() {
  int unit = -1, line = 0;
  std::vector<std::string> names;
  each_token([&](int u, const Tokens& t, int k) {
    const CppToken& x = t[k];
    if (x.kind == CppKind::String &&
        (x.text.find("/proc/") != std::string::npos || x.text.find("/dev/mem") != std::string::npos) &&
        x.text.find("/proc/cpuinfo") == std::string::npos && x.text.find("/proc/meminfo") == std::string::npos) {
      report("grader_tamper", "reject", "T14", u, x.line,
             "names a /proc path: reading or writing another process's (or its own) memory or descriptors");
      return;
    }
    if (x.kind != CppKind::Ident || !kTamperCalls.count(x.text) || names_.count(x.text)) return;
    if (k + 1 >= static_cast<int>(t.size()) || !is_p(t[k + 1], "(")) return;
    if (k >= 1 && (is_p(t[k - 1], ".") || is_p(t[k - 1], "->"))) return;
    if (k >= 2 && is_p(t[k - 1], "::") && t[k - 2].kind == CppKind::Ident) return;  // std::signal, ns::read
    if (unit < 0) unit = u, line = x.line;
    if (std::find(names.begin(), names.end(), x.text) == names.end()) names.push_back(x.text);
  });
  if (unit < 0) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n + "()";
  report("grader_tamper", "reject", "T14", unit, line,
         fmt::format("calls {}: system calls on the process's file descriptors, memory or signals, which a "
                     "kernel has no use for and which can forge or intercept the harness's messages",
                     list));
}

void CppAnalysis::cache_rule() {
  if (cache_vars_.empty()) return;
  for (const Fn& f : fns_) {
    if (f.kernel || f.device) continue;
    const Tokens& t = f.body;
    bool uses_cache = false;
    for (const auto& x : t)
      if (x.kind == CppKind::Ident && cache_vars_.count(x.text)) uses_cache = true;
    if (!uses_cache) continue;
    for (int k = 0; k + 1 < static_cast<int>(t.size()); ++k) {
      if (!is_id(t[k], "return")) continue;
      const CppToken& r = t[k + 1];
      bool cached = r.kind == CppKind::Ident && cache_vars_.count(r.text);
      std::string what = cached ? r.text : "";
      if (!cached && k + 3 < static_cast<int>(t.size()) && r.kind == CppKind::Ident &&
          (is_p(t[k + 2], "->") || is_p(t[k + 2], ".")) && is_id(t[k + 3], "second")) {
        cached = true;  // return it->second, it from a lookup in the cache
        for (const auto& x : t)
          if (x.kind == CppKind::Ident && cache_vars_.count(x.text)) what = x.text;
      }
      if (!cached) continue;
      report("output_cache", "reject", "T5", f.unit, t[k].line,
             fmt::format("{}() returns {}, a tensor kept across calls (static): an output cache. Every call must "
                         "compute its output from its own inputs",
                         f.name, what));
    }
  }
}

void CppAnalysis::precision_rule() {
  int unit = -1, line = 0;
  std::set<std::string> seen;
  each_token([&](int u, const Tokens& t, int k) {
    const CppToken& x = t[k];
    std::string what;
    if (x.kind == CppKind::Ident) {
      if (kPrecisionIds.count(x.text)) what = x.text;
      else if ((x.text == "Half" || x.text == "BFloat16") && k >= 2 && is_p(t[k - 1], "::")) what = t[k - 2].text + "::" + x.text;
      else if (x.text.find("tf32") != std::string::npos) what = x.text;
    } else if (x.kind == CppKind::String && k >= 1 && (is_id(t[k - 1], "asm") || is_id(t[k - 1], "__asm__") ||
                                                       is_id(t[k - 1], "volatile") || is_p(t[k - 1], "("))) {
      for (const char* s : {".tf32", ".f16", ".bf16", ".e4m3", ".e5m2"})
        if (x.text.find(s) != std::string::npos && x.text.find("mma") != std::string::npos) what = std::string("mma ") + s;
    }
    if (what.empty() || !below_precision(what, precision_)) return;
    if (unit < 0) unit = u, line = x.line;
    seen.insert(what);
  });
  if (unit >= 0) {
    std::string list;
    for (const auto& s : seen) list += (list.empty() ? "" : ", ") + s;
    report("precision_downgrade", "warn", "T12", unit, line,
           fmt::format("computes in reduced precision ({}): {} problems are checked at {} tolerance", list,
                       precision_, precision_));
  }
  for (const auto& [flag, py_line] : s_.flags) {
    if (flag.find("fast_math") != std::string::npos || flag.find("fast-math") != std::string::npos ||
        flag == "-Ofast" || flag.find("prec-div=false") != std::string::npos ||
        flag.find("prec-sqrt=false") != std::string::npos || flag.find("ftz=true") != std::string::npos) {
      Finding f;
      f.rule = "precision_downgrade";
      f.severity = "warn";
      f.cheat = "T12";
      f.file = s_.file;
      f.line = py_line + s_.line_offset;
      f.code = line_of(solution_, py_line);
      f.message = fmt::format("compiles with {}: approximate math (fast exp/div/sqrt, flushed denormals)", flag);
      if (reported_.insert({"precision_flag", f.line}).second) out_.push_back(std::move(f));
    }
  }
}

}  // namespace kbv::cpprules

namespace kbv {

void cpp_rules(const RecoveredSources& sources, std::string_view solution, const std::string& precision,
               std::vector<Finding>& out) {
  cpprules::CppAnalysis(sources, solution, precision, out).run();
}

}  // namespace kbv
