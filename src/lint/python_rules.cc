// Rules over the candidate's Python.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lint/ops.h"
#include "lint/rules.h"

namespace kbv {
namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

bool in(const std::string& s, std::initializer_list<const char*> set) {
  for (const char* x : set)
    if (s == x) return true;
  return false;
}

bool is_timer_path(const Path& c) {
  if (c.empty()) return false;
  if (c[0] == "time" || c[0] == "timeit") return true;
  for (const auto& p : c)
    if (in(p, {"Event", "elapsed_time", "synchronize", "perf_counter", "perf_counter_ns", "monotonic",
               "monotonic_ns", "process_time", "Timer", "benchmark", "record"}))
      return true;
  return false;
}

// torch.* functions that allocate, describe or configure rather than compute.
const std::set<std::string> kTorchAllowed = {
    "empty",     "empty_like",  "empty_strided", "zeros",      "zeros_like",  "ones",
    "ones_like", "full",        "full_like",     "tensor",     "as_tensor",   "asarray",
    "from_numpy", "from_dlpack", "frombuffer",   "device",     "dtype",       "Size",
    "Generator", "is_tensor",   "is_floating_point", "is_complex", "numel",   "no_grad",
    "enable_grad", "inference_mode", "set_grad_enabled", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast",  "finfo",      "iinfo",       "is_grad_enabled",
    "_assert",   "arange",      "manual_seed",   "seed",       "set_printoptions", "get_num_threads",
    "set_num_threads", "broadcast_shapes", "typename", "Tensor", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "use_deterministic_algorithms", "is_inference_mode_enabled",
    "get_device", "Stream", "Event", "cat_out_"};
const char* kTorchAllowedModules[] = {"torch.cuda.",    "torch.backends.", "torch.utils.",   "torch.version",
                                      "torch.testing.", "torch.jit.",      "torch.nn.init.", "torch.distributed.",
                                      "torch.library.", "torch.profiler.", "torch.random.",  "torch.hub.",
                                      "torch.autograd.", "torch.serialization.", "torch.types.", "torch.amp."};
const std::set<std::string> kLayerNotCompute = {"Parameter", "ParameterList", "ParameterDict", "ModuleList",
                                                "ModuleDict", "Module", "Identity", "Buffer"};

class PyRules {
 public:
  PyRules(const PyFacts& f, const std::string& file, int offset, const std::string& precision,
          std::vector<Finding>& out)
      : f_(f), t_(f.t()), file_(file), offset_(offset), precision_(precision), out_(out) {}

  void run() {
    model_new_ = f_.class_index("ModelNew");
    if (model_new_ >= 0) forward_ = f_.find_method(model_new_, "forward");
    layers();
    reachable();
    patch_rule();
    inspection_rule();
    tamper_rule();
    dynamic_rule();
    rng_rule();
    regenerate_rule();
    cache_rule();
    thread_rule();
    stream_rule();
    subclass_rule();
    reference_rule();
    fallback_rule();
    kernel_rule();
    precision_rule();
  }

 private:
  const PyFacts& f_;
  const std::vector<PyToken>& t_;
  const std::string& file_;
  int offset_;
  const std::string& precision_;
  std::vector<Finding>& out_;
  int model_new_ = -1, forward_ = -1;
  std::set<int> reach_;                           // functions reachable from ModelNew.forward
  std::map<int, std::set<std::string>> layers_;   // class -> self attributes holding torch.nn layers
  std::set<std::pair<std::string, int>> reported_;

  void report(const std::string& rule, const std::string& severity, const std::string& cheat, int line,
              const std::string& message) {
    if (!reported_.insert({rule, line}).second) return;
    Finding x;
    x.rule = rule;
    x.severity = severity;
    x.cheat = cheat;
    x.file = file_;
    x.line = line + offset_;
    x.code = line_of(f_.source, line);
    x.message = message;
    out_.push_back(std::move(x));
  }

  // Live statements (not under `if __name__ == "__main__":`), imports excluded.
  template <typename F>
  void each_stmt(F fn) const {
    for (int s = 0; s < static_cast<int>(f_.stmts.size()); ++s) {
      const PyStmt& st = f_.stmts[s];
      if (f_.dead[s] || st.kw == "import" || st.kw == "from") continue;
      fn(s, st);
    }
  }

  std::string fn_name(int s) const { return f_.func_of[s] >= 0 ? f_.funcs[f_.func_of[s]].name : ""; }

  // Statements whose innermost function is `fi` (nested functions excluded), the def itself not.
  std::vector<int> body_of(int fi) const {
    std::vector<int> out;
    for (int s : subtree(f_, f_.funcs[fi].stmt))
      if (s != f_.funcs[fi].stmt && f_.func_of[s] == fi && !f_.dead[s]) out.push_back(s);
    return out;
  }

  void layers() {
    for (const PyAssign& a : f_.assigns) {
      int cls = f_.class_of[a.stmt];
      if (cls < 0) continue;
      auto calls = calls_in(f_, a.value_begin, a.value_end);
      if (calls.empty() || calls[0].name != a.value_begin) continue;
      const Path& c = calls[0].canonical;
      if (c.size() != 3 || c[0] != "torch" || c[1] != "nn" || kLayerNotCompute.count(c[2])) continue;
      for (auto [x, y] : a.targets)
        if (y - x == 3 && is_name(t_[x], "self")) layers_[cls].insert(t_[x + 2].text);
    }
  }

  void reachable() {
    if (forward_ < 0) return;
    std::vector<int> todo = {forward_};
    reach_.insert(forward_);
    while (!todo.empty()) {
      int fi = todo.back();
      todo.pop_back();
      int cls = f_.funcs[fi].cls;
      for (int s : body_of(fi))
        for (const PyCall& c : calls_in(f_, f_.stmts[s].begin, f_.stmts[s].end)) {
          int target = -1;
          if (c.path.size() == 2 && c.path[0] == "self" && cls >= 0) {
            target = f_.find_method(cls, c.path[1]);
            // self.block(x), block = Block(...) of the file: Block.forward.
            for (const PyAssign& a : f_.assigns) {
              if (target >= 0 || f_.class_of[a.stmt] != cls || a.targets.size() != 1) continue;
              auto [x, y] = a.targets[0];
              if (y - x != 3 || !is_name(t_[x], "self") || t_[x + 2].text != c.path[1]) continue;
              auto inner = calls_in(f_, a.value_begin, a.value_end);
              if (!inner.empty() && inner[0].path.size() == 1 && f_.class_index(inner[0].path[0]) >= 0)
                target = f_.find_method(f_.class_index(inner[0].path[0]), "forward");
            }
          }
          if (c.path.size() == 1) {
            for (size_t k = 0; k < f_.funcs.size() && target < 0; ++k)
              if (f_.funcs[k].cls < 0 && f_.funcs[k].name == c.path[0]) target = static_cast<int>(k);
            int ci = f_.class_index(c.path[0]);
            if (target < 0 && ci >= 0) target = f_.find_method(ci, "forward");
          }
          if (target >= 0 && reach_.insert(target).second) todo.push_back(target);
        }
    }
  }

  // Is there PyTorch compute in tokens [b, e) of statement s? Names the first one.
  bool torch_compute(int s, int b, int e, std::string* what, int* line) const {
    int cls = f_.class_of[s];
    for (int k = b; k < e; ++k)
      if (is_op(t_[k], "@") && k > b) {
        *what = "the @ operator";
        *line = t_[k].line;
        return true;
      }
    for (const PyCall& c : calls_in(f_, b, e)) {
      if (f_.is_kernel_call(c, s)) continue;
      std::string j = join(c.canonical);
      bool compute = false;
      if (c.canonical.size() >= 2 && c.canonical[0] == "torch") {
        bool allowed_module = false;
        for (const char* m : kTorchAllowedModules) allowed_module = allowed_module || starts_with(j, m);
        if (starts_with(j, "torch.nn.functional.") || starts_with(j, "torch.special.") ||
            starts_with(j, "torch.linalg.") || starts_with(j, "torch.fft.") || starts_with(j, "torch.ops.aten.") ||
            starts_with(j, "torch._C._nn."))
          compute = true;
        else if (c.canonical.size() == 3 && c.canonical[1] == "nn" && !kLayerNotCompute.count(c.canonical[2]))
          compute = true;  // torch.nn.ReLU()(x)
        else if (c.canonical.size() == 2 && !kTorchAllowed.count(c.canonical[1]))
          compute = true;
        else if (!allowed_module && c.canonical.size() > 2 && c.canonical[1] != "nn")
          compute = true;
      } else if (c.path.size() >= 2 && is_compute_method(c.path.back()) && !f_.is_handle(c.path, s) &&
                 !f_.imports.count(c.path[0])) {
        compute = true;  // x.relu(), x.sum(), y.matmul(w)
      } else if (c.path.size() == 2 && c.path[0] == "?" && is_compute_method(c.path[1])) {
        compute = true;
      } else if (c.path.size() == 2 && c.path[0] == "self" && cls >= 0 && layers_.count(cls) &&
                 layers_.at(cls).count(c.path[1])) {
        compute = true;  // self.linear(x), an nn.Linear
      } else if (j == "Model" || (c.path.size() >= 2 && c.path[0] == "Model")) {
        compute = true;
      } else if (c.path.size() == 2 && c.path[0] == "?" && c.path[1] == "forward") {
        compute = true;  // super().forward(x)
      }
      if (compute) {
        *what = (c.path[0] == "?" ? "." + c.path.back() + "()" : join(c.path) + "()");
        *line = c.line;
        return true;
      }
    }
    return false;
  }

  // --- T4: patching timers or harness functions -------------------------------------------
  bool allowed_setting(const std::string& j) const {
    for (const char* p : {"torch.backends.", "torch._dynamo.config.", "torch._inductor.config.",
                          "torch._functorch.config.", "logging.", "warnings."})
      if (starts_with(j, p)) return true;
    return false;
  }

  void patched(const Path& canon, int line, const std::string& how) {
    std::string j = join(canon);
    if (is_timer_path(canon))
      report("patch_timer", "reject", "T4", line,
             fmt::format("{} {}: a candidate must not touch the clocks or events a harness times with", how, j));
    else
      report("patch_harness", "reject", "T4", line,
             fmt::format("{} {}, a library function the harness may call (comparisons, synchronisation, "
                         "modules): a candidate must not patch code it does not own",
                         how, j));
  }

  // Names bound to a module or to something in one (`_m = torch`, `_m = torch.cuda`,
  // `_m = sys.modules["torch"]`): patching through the alias is patching the module.
  std::map<std::string, Path> module_aliases() const {
    std::map<std::string, Path> aliases;
    for (const PyAssign& a : f_.assigns) {
      if (a.op != "=" || a.targets.size() != 1) continue;
      auto [x, y] = a.targets[0];
      if (y != x + 1 || t_[x].kind != PyKind::Name) continue;
      int next = a.value_begin;
      Path v = dotted_at(t_, a.value_begin, a.value_end, &next);
      if (v.empty() || !(f_.imports.count(v[0]) || aliases.count(v[0]))) continue;
      Path c = aliases.count(v[0]) ? aliases.at(v[0]) : f_.canonical(v);
      if (aliases.count(v[0])) c.insert(c.end(), v.begin() + 1, v.end());
      if (next == a.value_end) {
        aliases[t_[x].text] = c;
      } else if (join(c) == "sys.modules" && is_op(t_[next], "[") && match_bracket(t_, next) + 1 == a.value_end) {
        aliases[t_[x].text] = Path{"sys", "modules", "[...]"};
      }
    }
    return aliases;
  }

  void patch_rule() {
    const std::map<std::string, Path> aliases = module_aliases();
    auto module_path = [&](const Path& p) -> std::optional<Path> {
      if (p.empty()) return std::nullopt;
      if (f_.imports.count(p[0]) || p[0] == "__builtins__") return f_.canonical(p);
      auto it = aliases.find(p[0]);
      if (it == aliases.end()) return std::nullopt;
      Path c = it->second;
      c.insert(c.end(), p.begin() + 1, p.end());
      return c;
    };
    for (const PyAssign& a : f_.assigns) {
      if (a.op == "for" || a.op == "with") continue;
      for (auto [x, y] : a.targets) {
        int next = x;
        Path p = dotted_at(t_, x, y, &next);
        if (p.empty()) continue;
        // vars(torch)[name] = ...: the module's own dict.
        if (p.size() == 1 && p[0] == "vars" && next < y && is_op(t_[next], "(")) {
          int close = match_bracket(t_, next);
          int inner = next + 1;
          Path m = dotted_at(t_, next + 1, close, &inner);
          std::optional<Path> mc = module_path(m);
          if (mc && inner == close && close + 1 < y && is_op(t_[close + 1], "[")) {
            Path d = *mc;
            d.push_back("__dict__");
            patched(d, a.line, "replaces an entry of");
          }
          continue;
        }
        std::optional<Path> mc = module_path(p);
        if (!mc) continue;
        Path c = *mc;
        std::string j = join(c);
        if (next == y && p.size() >= 2) {
          if (allowed_setting(j)) continue;
          patched(c, a.line, "replaces");
        } else if (next < y && is_op(t_[next], "[")) {
          bool dict = j == "sys.modules" || j == "builtins.__dict__" || p[0] == "__builtins__" ||
                      std::find(c.begin(), c.end(), "__dict__") != c.end();
          if (dict) patched(c, a.line, "replaces an entry of");
        }
      }
    }
    each_stmt([&](int s, const PyStmt& st) {
      if (st.kw == "del")
        for (const PyRef& r : refs_in(f_, st.begin + 1, st.end))
          if (r.path.size() >= 2 && f_.imports.count(r.path[0])) patched(r.canonical, st.line, "deletes");
      for (const PyCall& c : calls_in(f_, st.begin, st.end)) {
        std::string j = join(c.canonical);
        if ((j == "setattr" || j == "delattr") && c.open + 1 < c.close) {
          int next = c.open + 1;
          Path target = dotted_at(t_, c.open + 1, c.close, &next);
          if (std::optional<Path> mc = module_path(target)) {
            Path canon = *mc;
            if (next + 1 < c.close && t_[next + 1].kind == PyKind::String && t_[next + 1].str >= 0)
              canon.push_back(f_.lex.strings[t_[next + 1].str].value.text);
            else
              canon.push_back("<a name computed at runtime>");
            if (!allowed_setting(join(canon))) patched(canon, c.line, j == "setattr" ? "setattr replaces" : "delattr removes");
          }
        }
        if (starts_with(j, "unittest.mock.patch") || starts_with(j, "mock.patch"))
          report("patch_harness", "reject", "T4", c.line,
                 fmt::format("{}() patches library code: a candidate must not patch code it does not own", j));
      }
    });
  }

  // --- T14: stack, frame and gc inspection; grader tampering; dynamic code ------------------
  void inspection_rule() {
    static const std::set<std::string> calls = {
        "inspect.stack",   "inspect.currentframe", "inspect.getouterframes", "inspect.getinnerframes",
        "inspect.trace",   "inspect.getframeinfo", "sys._getframe",          "sys._current_frames",
        "sys.settrace",    "sys.setprofile",       "threading.settrace",     "threading.setprofile",
        "gc.get_objects",  "gc.get_referrers",     "gc.get_referents",       "gc.garbage",
        "traceback.walk_stack", "traceback.extract_stack", "sys.monitoring"};
    static const std::set<std::string> attrs = {"f_back", "f_locals", "f_globals", "f_builtins",
                                                "tb_frame", "gi_frame", "cr_frame"};
    each_stmt([&](int, const PyStmt& st) {
      for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
        std::string j = join(r.canonical);
        for (size_t n = r.canonical.size(); n >= 2; --n) {
          std::string prefix = join(Path(r.canonical.begin(), r.canonical.begin() + static_cast<long>(n)));
          if (calls.count(prefix)) {
            report("frame_inspection", "reject", "T14", r.line,
                   fmt::format("{} looks through the interpreter's frames or objects for values it was not "
                               "given (the expected output, the harness's state)",
                               prefix));
            break;
          }
        }
      }
      for (int k = st.begin + 1; k < st.end; ++k)
        if (t_[k].kind == PyKind::Name && attrs.count(t_[k].text) && is_op(t_[k - 1], "."))
          report("frame_inspection", "reject", "T14", t_[k].line,
                 fmt::format(".{} reads another frame's variables (the caller's, the harness's)", t_[k].text));
    });
  }

  void tamper_rule() {
    static const std::set<std::string> calls = {
        "os.dup",     "os.dup2",    "os.pipe",        "os.pipe2",     "os.fdopen",      "os.write",
        "os.read",    "os.close",   "os.closerange",  "os.kill",      "os.killpg",      "os.openpty",
        "os.set_inheritable", "ctypes.memmove", "ctypes.memset", "ctypes.pythonapi", "ctypes.string_at",
        "signal.signal", "signal.setitimer", "signal.alarm", "signal.pthread_kill", "fcntl.fcntl",
        "resource.setrlimit", "os.sched_setaffinity", "os.nice"};
    each_stmt([&](int s, const PyStmt& st) {
      for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
        std::string j = join(r.canonical);
        for (size_t n = r.canonical.size(); n >= 2; --n) {
          std::string prefix = join(Path(r.canonical.begin(), r.canonical.begin() + static_cast<long>(n)));
          if (calls.count(prefix)) {
            report("grader_tamper", "reject", "T14", r.line,
                   fmt::format("{} works on the process's descriptors, memory, signals or limits: a kernel has "
                               "no use for it, and it can forge or intercept the harness's messages",
                               prefix));
            break;
          }
        }
      }
      for (int k = st.begin; k < st.end; ++k) {
        if (t_[k].kind != PyKind::String || t_[k].str < 0) continue;
        const std::string& v = f_.lex.strings[t_[k].str].value.text;
        for (size_t pos = v.find("/proc/"); pos != std::string::npos; pos = v.find("/proc/", pos + 1)) {
          std::string rest = v.substr(pos + 6, 8);
          if (starts_with(rest, "cpuinfo") || starts_with(rest, "meminfo")) continue;
          // The C++ rules report the same line when this string is a kernel source.
          int line = t_[k].line;
          const PyString& ps = f_.lex.strings[t_[k].str];
          int text_line = 1;
          for (size_t c = 0; c < pos; ++c) text_line += v[c] == '\n';
          if (int l = ps.value.file_line(text_line)) line = l;
          report("grader_tamper", "reject", "T14", line,
                 "names a /proc path: reading or writing another process's (or its own) memory or descriptors");
          break;
        }
        if (v.find("/dev/mem") != std::string::npos)
          report("grader_tamper", "reject", "T14", t_[k].line, "names /dev/mem");
      }
      (void)s;
    });
  }

  void dynamic_rule() {
    std::set<std::string> own;
    for (const auto& fn : f_.funcs) own.insert(fn.name);
    each_stmt([&](int, const PyStmt& st) {
      for (const PyCall& c : calls_in(f_, st.begin, st.end)) {
        std::string j = join(c.canonical);
        bool bare = c.path.size() == 1 && !f_.imports.count(c.path[0]) && !own.count(c.path[0]);
        // importlib loads code; asking whether a package exists (find_spec, metadata) does not.
        bool loads = starts_with(j, "importlib.") && !starts_with(j, "importlib.util.find_spec") &&
                     !starts_with(j, "importlib.metadata");
        bool dynamic = (bare && (j == "exec" || j == "eval" || j == "compile" || j == "__import__")) || loads ||
                       j == "marshal.loads" || j == "pickle.loads" ||
                       j == "types.FunctionType" || j == "types.CodeType" || starts_with(j, "runpy.");
        if (j == "getattr" && c.open + 1 < c.close) {
          auto args = split_commas(t_, c.open + 1, c.close);
          if (args.size() >= 2 && f_.imports.count(t_[args[0].first].text) && t_[args[0].first].kind == PyKind::Name &&
              !(args[1].second - args[1].first == 1 && t_[args[1].first].kind == PyKind::String))
            dynamic = true;
        }
        if (dynamic)
          report("dynamic_code", "reject", "T14", c.line,
                 fmt::format("{}() runs or looks up code that only exists at runtime, out of reach of these "
                             "checks; write the code out",
                             j));
      }
    });
  }

  // --- T13: seeding RNGs, regenerating the problem's inputs ---------------------------------
  void rng_rule() {
    static const std::set<std::string> seeds = {
        "torch.manual_seed",   "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.random.manual_seed",
        "torch.seed",          "torch.cuda.seed",        "torch.cuda.seed_all",        "torch.set_rng_state",
        "torch.cuda.set_rng_state", "torch.cuda.set_rng_state_all", "torch.random.set_rng_state",
        "numpy.random.seed",   "numpy.random.set_state", "random.seed", "random.setstate"};
    each_stmt([&](int s, const PyStmt& st) {
      for (const PyCall& c : calls_in(f_, st.begin, st.end)) {
        std::string j = join(c.canonical);
        if (!seeds.count(j) && c.path.back() != "manual_seed") continue;
        std::string fn = fn_name(s);
        if (fn == "get_inputs" || fn == "get_init_inputs") continue;  // the problem's own code, copied
        // g.manual_seed(...) on a generator of its own: the global generator is untouched.
        bool own_generator = !seeds.count(j);
        if (c.path[0] == "?") j = ".manual_seed";
        if (own_generator && fn == "__init__") continue;
        if (fn == "__init__")
          report("rng_seed", "warn", "T13", c.line,
                 fmt::format("{}() in __init__ reseeds the generator the harness seeded to build the weights: they "
                             "may differ from the reference's",
                             j));
        else
          report("rng_seed", "reject", "T13", c.line,
                 fmt::format("{}() sets the random generator's state: with a known seed the problem's inputs can "
                             "be regenerated and their answer precomputed",
                             j));
      }
    });
  }

  void regenerate_rule() {
    static const std::set<std::string> random = {
        "torch.rand",   "torch.randn",     "torch.randint", "torch.randperm", "torch.rand_like", "torch.randn_like",
        "torch.randint_like", "torch.normal", "torch.bernoulli", "torch.multinomial", "torch.poisson"};
    static const std::set<std::string> methods = {"uniform_", "normal_", "random_", "bernoulli_", "exponential_",
                                                  "geometric_", "cauchy_", "log_normal_"};
    each_stmt([&](int s, const PyStmt& st) {
      for (const PyCall& c : calls_in(f_, st.begin, st.end)) {
        std::string j = join(c.canonical);
        std::string fn = fn_name(s);
        if ((j == "get_inputs" || j == "get_init_inputs") && fn != "get_inputs" && fn != "get_init_inputs")
          report("regenerate_inputs", "reject", "T13", c.line,
                 fmt::format("calls {}(): the candidate computes on inputs it draws itself, not on those it is "
                             "given",
                             j));
        if (f_.func_of[s] < 0 || !reach_.count(f_.func_of[s])) continue;
        bool draws = random.count(j) || starts_with(j, "numpy.random.") ||
                     (c.canonical.size() == 2 && c.canonical[0] == "random") ||
                     (c.path.size() >= 2 && methods.count(c.path.back()));
        if (draws)
          report("regenerate_inputs", "reject", "T13", c.line,
                 fmt::format("forward draws random numbers ({}): outputs must come from the inputs the harness "
                             "passes in, not from tensors the candidate makes up",
                             c.path[0] == "?" ? "." + c.path.back() + "()" : join(c.path) + "()"));
      }
    });
  }

  // --- T5: output caches --------------------------------------------------------------------
  // A key made from an input's identity, address, shape or content in `fi`'s body, the most
  // specific one first: "x.data_ptr" and its line.
  std::pair<std::string, int> input_key(int fi) const {
    std::set<std::string> params(f_.funcs[fi].params.begin(), f_.funcs[fi].params.end());
    params.erase("self");
    std::pair<std::string, int> best{"", 0};
    int best_rank = 0;
    auto offer = [&](std::string what, int line, int rank) {
      if (rank > best_rank) best = {std::move(what), line}, best_rank = rank;
    };
    for (int s : body_of(fi)) {
      const PyStmt& st = f_.stmts[s];
      for (int k = st.begin; k < st.end; ++k) {
        const PyToken& x = t_[k];
        if (x.kind != PyKind::Name) continue;
        if ((x.text == "id" || x.text == "hash") && k + 2 < st.end && is_op(t_[k + 1], "(") &&
            params.count(t_[k + 2].text))
          offer(x.text + "(" + t_[k + 2].text + ")", x.line, 3);
        if (params.count(x.text) && k + 2 < st.end && is_op(t_[k + 1], ".")) {
          const std::string& a = t_[k + 2].text;
          if (in(a, {"data_ptr", "untyped_storage", "storage", "_cdata", "__array_interface__", "_version"}))
            offer(x.text + "." + a, x.line, 3);
          else if (in(a, {"tobytes", "numpy", "tolist", "item", "sum"}))
            offer("the content of " + x.text, x.line, 2);
          else if (in(a, {"shape", "size"}))
            offer(x.text + "." + a, x.line, 1);
        }
        if (params.count(x.text) && ((k + 1 < st.end && is_name(t_[k + 1], "is")) || (k > st.begin && is_name(t_[k - 1], "is"))))
          offer("the identity of " + x.text, x.line, 3);
        if (x.text == "equal" && k + 2 < st.end && is_op(t_[k + 1], "(") && params.count(t_[k + 2].text))
          offer("torch.equal(" + t_[k + 2].text + ", ...)", x.line, 2);
        if (x.text == "hashlib") offer("a hashlib digest of the input", x.line, 2);
      }
    }
    return best;
  }

  // Statements that run whenever `r` (in function fi) does: earlier siblings (compound ones by
  // their header, with/try bodies whole), the headers above it, and r itself.
  std::vector<std::pair<int, int>> must_run(int fi, int r) const {
    std::vector<std::pair<int, int>> ranges = {{f_.stmts[r].begin, f_.stmts[r].end}};
    int def = f_.funcs[fi].stmt;
    for (int s = r; s != def && s >= 0; s = f_.stmts[s].parent) {
      int parent = f_.stmts[s].parent;
      if (parent < 0) break;
      if (parent != def) ranges.push_back({f_.stmts[parent].begin, f_.stmts[parent].end});
      for (int sib : f_.stmts[parent].body) {
        if (sib == s) break;
        const PyStmt& x = f_.stmts[sib];
        if (!x.compound || x.kw == "with" || x.kw == "try") {
          for (int d : subtree(f_, sib)) ranges.push_back({f_.stmts[d].begin, f_.stmts[d].end});
        } else {
          ranges.push_back({x.begin, x.end});  // if/for/while...: only the header surely runs
        }
      }
    }
    return ranges;
  }

  // The value of `return` reads state kept across calls: "self._cache[key]", a module-level dict.
  std::string persistent_read(int fi, int r) const {
    const PyStmt& st = f_.stmts[r];
    int b = st.begin + 1, e = st.end;
    if (b >= e) return "";
    while (b < e && is_op(t_[b], "(")) ++b;
    if (b >= e || t_[b].kind != PyKind::Name) return "";
    int next = b;
    Path p = dotted_at(t_, b, e, &next);
    bool called = next < e && is_op(t_[next], "(");
    int cls = f_.funcs[fi].cls;
    if (p[0] == "self" && p.size() >= 2) {
      if (cls >= 0 && f_.find_method(cls, p[1]) >= 0) return "";
      if (f_.is_handle(Path(p.begin(), p.begin() + 2), r)) return "";
      if (called && p.size() == 2) return "";  // self.layer(x)
      return join(Path(p.begin(), p.begin() + 2));
    }
    if (p.size() == 1 && !called) {
      // A module-level container (dict/list/None) that the function reads back.
      for (const PyAssign& a : f_.assigns) {
        if (f_.func_of[a.stmt] >= 0 || a.targets.size() != 1 || a.targets[0].second - a.targets[0].first != 1 ||
            t_[a.targets[0].first].text != p[0])
          continue;
        const PyToken& v = t_[a.value_begin];
        if (is_op(v, "{") || is_op(v, "[") || is_name(v, "None") || is_name(v, "dict") || is_name(v, "OrderedDict") ||
            is_name(v, "collections") || is_name(v, "weakref"))
          return p[0];
      }
    }
    return "";
  }

  void cache_rule() {
    // Memoizing decorators on forward or on what computes with the kernel.
    for (size_t i = 0; i < f_.funcs.size(); ++i) {
      const PyFunc& fn = f_.funcs[i];
      if (f_.dead[fn.stmt] || !(fn.calls_kernel || reach_.count(static_cast<int>(i)))) continue;
      for (const Path& d : fn.decorators) {
        std::string j = join(d);
        if (j == "functools.lru_cache" || j == "functools.cache" || j == "functools.cached_property" ||
            j == "lru_cache" || j == "cache")
          report("output_cache", "reject", "T5", f_.stmts[fn.stmt].line,
                 fmt::format("@{} on {}(): results are memoized by argument, so a repeated call returns the old "
                             "output instead of computing",
                             j, fn.name));
      }
    }
    if (forward_ < 0) return;
    auto [key, key_line] = input_key(forward_);
    for (int r : body_of(forward_)) {
      if (f_.stmts[r].kw != "return") continue;
      std::string state = persistent_read(forward_, r);
      if (state.empty()) continue;
      bool computes = false;
      for (auto [b, e] : must_run(forward_, r))
        for (const PyCall& c : calls_in(f_, b, e))
          if (f_.is_kernel_call(c, r)) computes = true;
      if (computes) continue;
      std::string keyed = key.empty() ? "" : fmt::format(", keyed on {} (line {})", key, key_line + offset_);
      report("output_cache", "reject", "T5", f_.stmts[r].line,
             fmt::format("forward returns {}, kept from an earlier call{}, on a path that runs no kernel: an "
                         "output cache. Every call must compute its output from its own inputs",
                         state, keyed));
    }
  }

  // --- T2: threads and processes ----------------------------------------------------------
  void thread_rule() {
    each_stmt([&](int, const PyStmt& st) {
      for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
        std::string j = join(r.canonical);
        bool thread = starts_with(j, "threading.Thread") || starts_with(j, "threading.Timer") ||
                      starts_with(j, "_thread.start_new") || starts_with(j, "concurrent.futures") ||
                      starts_with(j, "multiprocessing.") || j == "multiprocessing" || starts_with(j, "torch.multiprocessing") ||
                      starts_with(j, "subprocess.") || in(j, {"os.fork", "os.forkpty", "os.system", "os.popen",
                                                               "os.spawnl", "os.spawnv", "os.posix_spawn",
                                                               "torch.jit.fork", "torch.jit._fork", "asyncio.run",
                                                               "asyncio.create_task", "asyncio.ensure_future",
                                                               "asyncio.get_event_loop", "asyncio.new_event_loop"});
        if (thread)
          report("threads", "reject", "T2", r.line,
                 fmt::format("{} runs work on another thread or process, which can finish after the call returns",
                             j));
      }
    });
  }

  // --- T1: streams of its own -------------------------------------------------------------
  void stream_rule() {
    std::set<std::string> callers;  // names bound to the caller's stream
    for (const PyAssign& a : f_.assigns)
      for (const PyCall& c : calls_in(f_, a.value_begin, a.value_end)) {
        std::string j = join(c.canonical);
        if (j == "torch.cuda.current_stream" || j == "torch.cuda.default_stream")
          for (auto [x, y] : a.targets) {
            int next = x;
            Path p = dotted_at(t_, x, y, &next);
            if (!p.empty()) callers.insert(join(p));
          }
      }
    int create_line = 0;
    std::string create;
    bool joined = false;
    each_stmt([&](int, const PyStmt& st) {
      for (const PyCall& c : calls_in(f_, st.begin, st.end)) {
        std::string j = join(c.canonical);
        if (j == "torch.cuda.Stream" || j == "torch.cuda.ExternalStream" || j == "torch.Stream" ||
            j == "torch.cuda.streams.Stream") {
          if (!create_line) create_line = c.line, create = j;
        }
        if (j == "torch.cuda.synchronize" || (c.path.size() >= 2 && c.path.back() == "synchronize")) joined = true;
        if (c.path.size() >= 2 && (c.path.back() == "wait_stream" || c.path.back() == "wait_event")) {
          Path receiver(c.path.begin(), c.path.end() - 1);
          if (receiver[0] == "?") {
            // torch.cuda.current_stream().wait_stream(s): the call before the '.'
            int dot = c.name - 1;
            if (dot > 0 && is_op(t_[dot - 1], ")")) {
              int depth = 0, k = dot - 1;
              for (; k > st.begin; --k) {
                if (is_op(t_[k], ")")) ++depth;
                if (is_op(t_[k], "(") && --depth == 0) break;
              }
              for (const PyCall& inner : calls_in(f_, st.begin, st.end))
                if (inner.open == k) {
                  std::string ij = join(inner.canonical);
                  if (ij == "torch.cuda.current_stream" || ij == "torch.cuda.default_stream") joined = true;
                }
            }
          } else if (callers.count(join(receiver))) {
            joined = true;
          }
        }
      }
    });
    if (!create_line) return;
    if (joined)
      report("side_stream", "warn", "T1", create_line,
             fmt::format("{}() makes a stream of its own; the caller's stream (or the host) waits for it, so the "
                         "timed stream covers its work",
                         create));
    else
      report("side_stream", "reject", "T1", create_line,
             fmt::format("{}() makes a stream of its own and nothing makes the caller's stream wait for it "
                         "(torch.cuda.current_stream().wait_stream(s)): the work runs outside the timed stream",
                         create));
  }

  // --- T3: tensor subclasses and deferred outputs -------------------------------------------
  void subclass_rule() {
    for (const PyClass& c : f_.classes) {
      if (f_.dead[c.stmt]) continue;
      for (const Path& b : c.bases) {
        std::string j = join(b);
        if (j == "torch.Tensor" || j == "torch._C._TensorBase" || j == "torch._C.TensorBase" ||
            j == "torch._tensor.Tensor")
          report("tensor_subclass", "reject", "T3", f_.stmts[c.stmt].line,
                 fmt::format("class {} subclasses {}: outputs must be plain tensors whose values exist when the "
                             "call returns",
                             c.name, j));
      }
    }
    each_stmt([&](int, const PyStmt& st) {
      for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
        std::string j = join(r.canonical);
        const std::string& last = r.path.back();
        if (last == "_make_subclass" || last == "_make_wrapper_subclass" || last == "__torch_function__" ||
            last == "__torch_dispatch__" || starts_with(j, "torch.utils._python_dispatch") ||
            starts_with(j, "torch.overrides.TorchFunctionMode") || starts_with(j, "torch._subclasses"))
          report("tensor_subclass", "reject", "T3", r.line,
                 fmt::format("{} builds tensors whose behaviour is Python code (a subclass, a dispatch mode): "
                             "outputs must be plain tensors",
                             j));
      }
      for (int k = st.begin + 1; k + 1 < st.end; ++k)
        if (is_op(t_[k - 1], ".") && is_name(t_[k], "as_subclass") && is_op(t_[k + 1], "("))
          report("tensor_subclass", "reject", "T3", t_[k].line,
                 ".as_subclass() turns the output into a tensor subclass: outputs must be plain tensors");
      if (st.kw == "def") {
        int k = st.begin;
        while (k < st.end && !is_name(t_[k], "def")) ++k;
        if (k + 1 < st.end && (t_[k + 1].text == "__torch_function__" || t_[k + 1].text == "__torch_dispatch__"))
          report("tensor_subclass", "reject", "T3", st.line,
                 fmt::format("defines {}: tensors that run Python code when used are not plain outputs",
                             t_[k + 1].text));
      }
    });
  }

  // --- T11: calling the reference, falling back to PyTorch, no kernel -------------------------
  void reference_rule() {
    for (const PyClass& c : f_.classes)
      for (const Path& b : c.bases)
        if (!f_.dead[c.stmt] && (join(b) == "Model" || (b.size() > 1 && b.back() == "Model")))
          report("reference_model", "reject", "T11", f_.stmts[c.stmt].line,
                 fmt::format("class {} inherits from the reference Model: its forward is the reference's PyTorch "
                             "code",
                             c.name));
    for (const auto& [local, path] : f_.imports)
      if (local == "Model" || (!path.empty() && path.back() == "Model"))
        for (int s = 0; s < static_cast<int>(f_.stmts.size()); ++s)
          if ((f_.stmts[s].kw == "from" || f_.stmts[s].kw == "import") && !f_.dead[s])
            for (int k = f_.stmts[s].begin; k < f_.stmts[s].end; ++k)
              if (is_name(t_[k], "Model"))
                report("reference_model", "reject", "T11", f_.stmts[s].line,
                       fmt::format("imports the reference Model ({}): a solution must not use it", join(path)));
    each_stmt([&](int s, const PyStmt& st) {
      if (st.kw == "class") return;
      for (const PyRef& r : refs_in(f_, st.begin, st.end))
        if (r.path[0] == "Model" && f_.class_of[s] != f_.class_index("Model"))
          report("reference_model", "reject", "T11", r.line,
                 fmt::format("uses the reference Model ({}): the reference's PyTorch code would do the work",
                             join(r.path)));
    });
  }

  // A function defined in the file that `c` calls from statement s (self.m or a module function).
  int callee(const PyCall& c, int s) const {
    if (c.path.size() == 2 && c.path[0] == "self" && f_.class_of[s] >= 0) return f_.find_method(f_.class_of[s], c.path[1]);
    if (c.path.size() == 1)
      for (size_t k = 0; k < f_.funcs.size(); ++k)
        if (f_.funcs[k].cls < 0 && f_.funcs[k].name == c.path[0]) return static_cast<int>(k);
    return -1;
  }

  void fallback_rule() {
    each_stmt([&](int s, const PyStmt& st) {
      if (st.kw != "except") return;
      for (int d : subtree(f_, s)) {
        if (d == s || f_.dead[d]) continue;
        std::string what;
        int line = 0;
        bool computes = torch_compute(d, f_.stmts[d].begin, f_.stmts[d].end, &what, &line);
        // One level down: a helper of its own that computes with PyTorch and runs no kernel.
        for (const PyCall& c : calls_in(f_, f_.stmts[d].begin, f_.stmts[d].end)) {
          int fi = computes ? -1 : callee(c, d);
          if (fi < 0 || f_.funcs[fi].calls_kernel) continue;
          for (int b : body_of(fi)) {
            std::string inner;
            int inner_line = 0;
            if (torch_compute(b, f_.stmts[b].begin, f_.stmts[b].end, &inner, &inner_line)) {
              computes = true;
              what = fmt::format("{}() at line {}, through {}()", inner.substr(0, inner.size() - 2),
                                 inner_line + offset_, f_.funcs[fi].name);
              line = c.line;
              break;
            }
          }
          if (computes) break;
        }
        if (computes) {
          report("try_fallback", "reject", "T11", line,
                 fmt::format("the except handler at line {} computes with PyTorch ({}): when the kernel fails, "
                             "PyTorch silently does the work. Let the error propagate",
                             st.line + offset_, what));
          return;
        }
      }
    });
  }

  void kernel_rule() {
    if (model_new_ < 0 || f_.dead[f_.classes[model_new_].stmt]) return;  // the runtime says ModelNew is missing
    const PyClass& mn = f_.classes[model_new_];
    int line = f_.stmts[mn.stmt].line;
    if (forward_ >= 0) line = f_.stmts[f_.funcs[forward_].stmt].line;
    std::string what;
    int what_line = 0;
    if (forward_ >= 0)
      for (int fi : reach_)
        for (int s : body_of(fi))
          if (what.empty() && torch_compute(s, f_.stmts[s].begin, f_.stmts[s].end, &what, &what_line)) break;
    std::string computes = what.empty() ? "" : fmt::format("; it computes with {} (line {})", what, what_line + offset_);
    if (!f_.kernel_defined) {
      report("no_kernel_defined", "reject", "T11", what.empty() ? line : what_line,
             fmt::format("the solution compiles no kernel (no load_inline/load, no @triton.jit, no CuPy kernel): "
                         "ModelNew runs no custom code{}",
                         computes));
      return;
    }
    if (forward_ >= 0 && f_.funcs[forward_].calls_kernel) return;
    if (forward_ >= 0 && mn.kernel_module) return;
    // The compiled function handed on uncalled (to a pool, map, functools.partial) is still used.
    for (int fi : reach_)
      for (int s : body_of(fi))
        for (const PyRef& r : refs_in(f_, f_.stmts[s].begin, f_.stmts[s].end))
          if (!r.called && f_.is_handle(r.path, s)) return;
    report("kernel_not_called", "reject", "T11", what.empty() ? line : what_line,
           fmt::format("ModelNew.forward never calls the compiled kernel{}: the custom code is built but PyTorch "
                       "does the work",
                       computes));
  }

  // --- T12: precision downgrade (a warning: the fp32 tolerance decides) ----------------------
  void precision_rule() {
    int first = 0;
    std::set<std::string> seen;
    auto note = [&](const std::string& what, int line) {
      if (!below_precision(what, precision_)) return;
      if (!first) first = line;
      seen.insert(what);
    };
    each_stmt([&](int, const PyStmt& st) {
      for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
        std::string j = join(r.canonical);
        if (in(j, {"torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2"}) ||
            starts_with(j, "torch.autocast") || starts_with(j, "torch.cuda.amp") || starts_with(j, "torch.amp") ||
            starts_with(j, "torch.cpu.amp"))
          note(j, r.line);
        if (j == "torch.set_float32_matmul_precision" && r.called) {
          int open = r.end;
          if (open + 1 < st.end && t_[open + 1].kind == PyKind::String && t_[open + 1].str >= 0 &&
              f_.lex.strings[t_[open + 1].str].value.text != "highest")
            note(j + "('" + f_.lex.strings[t_[open + 1].str].value.text + "')", r.line);
        }
      }
      for (const PyCall& c : calls_in(f_, st.begin, st.end))
        if (c.path.size() >= 2 && (c.path.back() == "half" || c.path.back() == "bfloat16") && c.open + 1 == c.close)
          note("." + c.path.back() + "()", c.line);
    });
    for (const PyAssign& a : f_.assigns)
      for (auto [x, y] : a.targets) {
        std::string target;
        for (int k = x; k < y; ++k) target += t_[k].text;
        if ((target.find("allow_tf32") != std::string::npos || target.find("reduced_precision_reduction") != std::string::npos) &&
            a.value_end - a.value_begin == 1 && is_name(t_[a.value_begin], "True"))
          note(target + " = True", a.line);
      }
    if (!first) return;
    std::string list;
    for (const auto& s : seen) list += (list.empty() ? "" : ", ") + s;
    report("precision_downgrade", "warn", "T12", first,
           fmt::format("computes in reduced precision ({}): {} problems are checked at {} tolerance", list,
                       precision_, precision_));
  }
};

}  // namespace

void python_rules(const PyFacts& facts, const std::string& file, int line_offset, const std::string& precision,
                  std::vector<Finding>& out) {
  PyRules(facts, file, line_offset, precision, out).run();
}

}  // namespace kbv
