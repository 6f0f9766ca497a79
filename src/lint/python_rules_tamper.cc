// Python rules against the harness (lint/python_rules.h): T4 patching timers or harness functions,
// T14 stack, frame and gc inspection, grader tampering and dynamic code, T13 seeding RNGs and
// regenerating the problem's inputs.
#include <map>
#include <set>

#include <fmt/format.h>

#include "lint/ops.h"
#include "lint/python_rules.h"

namespace kbv::pyrules {

namespace {

bool is_timer_path(const Path& c) {
  if (c.empty()) return false;
  if (c[0] == "time" || c[0] == "timeit") return true;
  for (const auto& p : c)
    if (in(p, {"Event", "elapsed_time", "synchronize", "perf_counter", "perf_counter_ns", "monotonic",
               "monotonic_ns", "process_time", "Timer", "benchmark", "record"}))
      return true;
  return false;
}

}  // namespace

// --- T4: patching timers or harness functions -------------------------------------------
bool PyRules::allowed_setting(const std::string& j) const {
  for (const char* p : {"torch.backends.", "torch._dynamo.config.", "torch._inductor.config.",
                        "torch._functorch.config.", "logging.", "warnings."})
    if (starts_with(j, p)) return true;
  return false;
}

void PyRules::patched(const Path& canon, int line, const std::string& how) {
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
std::map<std::string, Path> PyRules::module_aliases() const {
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

void PyRules::patch_rule() {
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
void PyRules::inspection_rule() {
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

void PyRules::tamper_rule() {
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

void PyRules::dynamic_rule() {
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
void PyRules::rng_rule() {
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

void PyRules::regenerate_rule() {
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

}  // namespace kbv::pyrules
