#include "lint/python_syntax.h"

#include <algorithm>

namespace kbv {
namespace {

const std::set<std::string> kCompound = {"class", "def",     "if",   "elif", "else",
                                         "try",   "except",  "finally", "with", "for", "while"};
const std::set<std::string> kSimpleKw = {"return", "import", "from",  "del",   "global", "nonlocal",
                                         "raise",  "pass",   "assert", "yield", "break", "continue"};
const std::set<std::string> kNotCallee = {"if",  "elif", "while", "return", "in",  "and",    "or",    "not",
                                          "for", "with", "assert", "yield", "lambda", "else", "is", "await",
                                          "del", "raise", "from", "import", "except", "case", "match"};

// Kernel decorators: the function they decorate is compiled code.
bool kernel_decorator(const Path& p) {
  std::string j = join(p);
  for (const char* k : {"triton.jit", "triton.autotune", "triton.heuristics", "numba.cuda.jit", "numba.jit",
                        "numba.njit", "cutlass.cute.kernel", "cutlass.cute.jit", "cute.kernel", "cute.jit",
                        "tilelang.jit", "warp.kernel"})
    if (j == k || j.rfind(std::string(k) + ".", 0) == 0) return true;
  return false;
}

void splice(const PyLex& lex, const PyToken& tok, std::vector<PyToken>& out) {
  out.push_back(tok);
  if (tok.kind != PyKind::String || tok.str < 0) return;
  for (const PyField& f : lex.strings[tok.str].fields) {
    PyToken open;
    open.kind = PyKind::Op;
    open.text = "(";
    open.line = open.end_line = f.line;
    open.in_field = true;
    out.push_back(open);
    for (const PyToken& inner : f.tokens) {
      size_t at = out.size();
      splice(lex, inner, out);
      for (size_t k = at; k < out.size(); ++k) out[k].in_field = true;
    }
    PyToken close = open;
    close.text = ")";
    out.push_back(close);
  }
}

class Builder {
 public:
  explicit Builder(PyFacts& f) : f_(f), t_(f.lex.tokens) {}

  void statements() {
    std::vector<int> parents = {-1};
    int last_header = -1;
    int last_stmt = -1;
    size_t k = 0;
    while (k < t_.size() && t_[k].kind != PyKind::End) {
      const PyToken& tok = t_[k];
      if (tok.kind == PyKind::Indent) {
        parents.push_back(last_header >= 0 ? last_header : last_stmt);
        last_header = -1;
        ++k;
        continue;
      }
      if (tok.kind == PyKind::Dedent) {
        if (parents.size() > 1) parents.pop_back();
        ++k;
        continue;
      }
      if (tok.kind == PyKind::Newline) {
        ++k;
        continue;
      }
      size_t e = k;
      while (e < t_.size() && t_[e].kind != PyKind::Newline && t_[e].kind != PyKind::End &&
             t_[e].kind != PyKind::Indent && t_[e].kind != PyKind::Dedent)
        ++e;
      line(static_cast<int>(k), static_cast<int>(e), parents.back(), last_header, last_stmt);
      k = e;
    }
  }

 private:
  PyFacts& f_;
  const std::vector<PyToken>& t_;
  std::vector<int> decorators_;

  int add(int begin, int end, int parent, const std::string& kw, bool compound) {
    PyStmt s;
    s.begin = begin;
    s.end = end;
    s.line = begin < static_cast<int>(t_.size()) ? t_[begin].line : 0;
    s.kw = kw;
    s.compound = compound;
    s.parent = parent;
    int idx = static_cast<int>(f_.stmts.size());
    f_.stmts.push_back(std::move(s));
    if (kw != "@") {
      if (parent >= 0) f_.stmts[parent].body.push_back(idx);
      else f_.top.push_back(idx);
    }
    return idx;
  }

  void simple(int a, int e, int parent, int& last_stmt) {
    int depth = 0, start = a;
    for (int k = a; k <= e; ++k) {
      if (k < e) {
        const PyToken& x = t_[k];
        if (x.kind == PyKind::Op && (x.text == "(" || x.text == "[" || x.text == "{")) ++depth;
        if (x.kind == PyKind::Op && (x.text == ")" || x.text == "]" || x.text == "}")) --depth;
        if (!(depth == 0 && is_op(x, ";"))) continue;
      }
      if (k > start) {
        std::string kw = t_[start].kind == PyKind::Name && kSimpleKw.count(t_[start].text) ? t_[start].text : "";
        last_stmt = add(start, k, parent, kw, false);
      }
      start = k + 1;
    }
  }

  void line(int a, int e, int parent, int& last_header, int& last_stmt) {
    last_header = -1;
    if (is_op(t_[a], "@")) {
      decorators_.push_back(add(a, e, parent, "@", false));
      return;
    }
    int kwi = a;
    if (is_name(t_[a], "async") && a + 1 < e) kwi = a + 1;
    std::string kw = t_[kwi].kind == PyKind::Name ? t_[kwi].text : "";
    bool compound = kCompound.count(kw) > 0;
    // Soft keywords: no simple statement ends with ':'.
    if ((kw == "match" || kw == "case") && e - a > 1 && is_op(t_[e - 1], ":")) compound = true;
    if (!compound) {
      decorators_.clear();
      simple(a, e, parent, last_stmt);
      return;
    }
    // The header's ':' at depth 0 (a lambda's ':' belongs to the lambda).
    int depth = 0, lambdas = 0, colon = -1;
    for (int k = kwi + 1; k < e; ++k) {
      const PyToken& x = t_[k];
      if (x.kind == PyKind::Op && (x.text == "(" || x.text == "[" || x.text == "{")) ++depth;
      if (x.kind == PyKind::Op && (x.text == ")" || x.text == "]" || x.text == "}")) --depth;
      if (depth == 0 && is_name(x, "lambda")) ++lambdas;
      if (depth == 0 && is_op(x, ":")) {
        if (lambdas > 0) {
          --lambdas;
          continue;
        }
        colon = k;
        break;
      }
    }
    if (colon < 0) colon = e;
    int header = add(a, colon, parent, kw, true);
    if (kw == "def" || kw == "class") {
      f_.stmts[header].decorators = decorators_;
      for (int d : decorators_) f_.stmts[d].parent = parent;
    }
    decorators_.clear();
    last_stmt = header;
    if (colon + 1 < e) {
      simple(colon + 1, e, header, last_stmt);
    } else {
      last_header = header;
    }
  }
};

}  // namespace

Path dotted_at(const std::vector<PyToken>& t, int i, int end, int* next) {
  Path p;
  int k = i;
  while (k < end && t[k].kind == PyKind::Name) {
    p.push_back(t[k].text);
    if (k + 2 < end && is_op(t[k + 1], ".") && t[k + 2].kind == PyKind::Name) {
      k += 2;
      continue;
    }
    ++k;
    break;
  }
  if (next) *next = k;
  return p;
}

std::vector<std::pair<int, int>> split_commas(const std::vector<PyToken>& t, int a, int e) {
  std::vector<std::pair<int, int>> out;
  int depth = 0, start = a;
  for (int k = a; k <= e; ++k) {
    if (k < e) {
      if (t[k].kind == PyKind::Op && (t[k].text == "(" || t[k].text == "[" || t[k].text == "{")) ++depth;
      if (t[k].kind == PyKind::Op && (t[k].text == ")" || t[k].text == "]" || t[k].text == "}")) --depth;
      if (!(depth == 0 && is_op(t[k], ","))) continue;
    }
    if (k > start) out.push_back({start, k});
    start = k + 1;
  }
  return out;
}

std::string join(const Path& p) {
  std::string s;
  for (const auto& x : p) s += (s.empty() ? "" : ".") + x;
  return s;
}

bool is_op(const PyToken& tok, std::string_view op) { return tok.kind == PyKind::Op && tok.text == op; }
bool is_name(const PyToken& tok, std::string_view name) { return tok.kind == PyKind::Name && tok.text == name; }

int match_bracket(const std::vector<PyToken>& t, int open) {
  int depth = 0;
  for (int k = open; k < static_cast<int>(t.size()); ++k) {
    if (t[k].kind != PyKind::Op) continue;
    const std::string& x = t[k].text;
    if (x == "(" || x == "[" || x == "{") ++depth;
    if (x == ")" || x == "]" || x == "}") {
      if (--depth == 0) return k;
    }
    if (t[k].kind == PyKind::End) break;
  }
  return static_cast<int>(t.size()) - 1;
}

Path PyFacts::canonical(const Path& p) const {
  if (p.empty()) return p;
  auto it = imports.find(p[0]);
  if (it == imports.end()) return p;
  Path out = it->second;
  out.insert(out.end(), p.begin() + 1, p.end());
  return out;
}

std::string PyFacts::handle_key(const Path& p, int stmt) const {
  if (p.size() >= 2 && p[0] == "self" && stmt >= 0 && class_of[stmt] >= 0)
    return "@" + classes[class_of[stmt]].name + "." + join(Path(p.begin() + 1, p.end()));
  return join(p);
}

bool PyFacts::is_handle(const Path& p, int stmt) const {
  for (size_t n = p.size(); n >= 1; --n) {
    if (n == 1 && p[0] == "self") break;
    if (handles.count(handle_key(Path(p.begin(), p.begin() + static_cast<long>(n)), stmt))) return true;
  }
  return false;
}

bool PyFacts::is_loader(const Path& c) const {
  if (c.empty()) return false;
  const std::string& last = c.back();
  std::string j = join(c);
  if (last == "load_inline") return true;
  if (last == "load" && j.find("cpp_extension") != std::string::npos) return true;
  for (const char* k : {"cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel",
                        "torch.cuda.jiterator._create_jit_fn", "torch.cuda.jiterator._create_multi_output_jit_fn",
                        "numba.cuda.jit", "numba.njit", "numba.jit", "triton.jit", "tilelang.compile"})
    if (j == k) return true;
  return c.size() == 1 && factories.count(last) > 0;
}

bool PyFacts::is_kernel_call(const PyCall& c, int stmt) const {
  if (c.path.empty() || c.path[0] == "?") return false;
  if (kernel_defined && c.canonical.size() >= 3 && c.canonical[0] == "torch" && c.canonical[1] == "ops") {
    static const std::set<std::string> builtin = {"aten", "prim", "prims", "quantized", "_c10d_functional",
                                                  "higher_order", "_quantized", "profiler"};
    if (!builtin.count(c.canonical[2])) return true;
  }
  return is_handle(c.path, stmt);
}

int PyFacts::class_index(const std::string& name) const {
  for (size_t k = 0; k < classes.size(); ++k)
    if (classes[k].name == name) return static_cast<int>(k);
  return -1;
}

int PyFacts::find_method(int cls, const std::string& name) const {
  for (int depth = 0; cls >= 0 && depth < 16; ++depth) {
    auto it = classes[cls].methods.find(name);
    if (it != classes[cls].methods.end()) return it->second;
    int next = -1;
    for (const Path& b : classes[cls].bases)
      if (b.size() == 1 && (next = class_index(b[0])) >= 0) break;
    cls = next;
  }
  return -1;
}

std::vector<PyCall> calls_in(const PyFacts& f, int begin, int end) {
  const auto& t = f.t();
  std::vector<PyCall> out;
  for (int k = begin; k < end; ++k) {
    if (!is_op(t[k], "(") || k == 0 || t[k].in_field != t[k - 1].in_field) continue;
    const PyToken& prev = t[k - 1];
    PyCall c;
    c.open = k;
    c.close = match_bracket(t, k);
    c.line = t[k].line;
    int tail = k - 1;
    if (is_op(prev, "]")) {
      // name[...](...): find the '[' and the name before it.
      int depth = 0, j = tail;
      for (; j >= begin; --j) {
        if (is_op(t[j], "]")) ++depth;
        if (is_op(t[j], "[") && --depth == 0) break;
      }
      if (j <= begin || t[j - 1].kind != PyKind::Name) continue;
      c.subscripted = true;
      tail = j - 1;
    } else if (prev.kind != PyKind::Name || kNotCallee.count(prev.text)) {
      continue;
    }
    int j = tail;
    c.path.insert(c.path.begin(), t[j].text);
    while (j - 2 >= begin && is_op(t[j - 1], ".") && t[j - 2].kind == PyKind::Name) {
      j -= 2;
      c.path.insert(c.path.begin(), t[j].text);
    }
    if (j - 1 >= begin && is_op(t[j - 1], ".")) c.path.insert(c.path.begin(), "?");
    if (j - 1 >= begin && (is_name(t[j - 1], "def") || is_name(t[j - 1], "class"))) continue;
    c.name = j;
    c.canonical = c.path[0] == "?" ? c.path : f.canonical(c.path);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<PyRef> refs_in(const PyFacts& f, int begin, int end) {
  const auto& t = f.t();
  std::vector<PyRef> out;
  for (int k = begin; k < end; ++k) {
    if (t[k].kind != PyKind::Name) continue;
    if (k > begin && is_op(t[k - 1], ".")) continue;  // inside a chain
    PyRef r;
    int next = k;
    r.path = dotted_at(t, k, end, &next);
    r.begin = k;
    r.end = next;
    r.called = next < end && is_op(t[next], "(");
    r.line = t[k].line;
    r.canonical = f.canonical(r.path);
    k = next - 1;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<int> subtree(const PyFacts& f, int stmt) {
  std::vector<int> out = {stmt};
  for (size_t k = 0; k < out.size(); ++k)
    for (int c : f.stmts[out[k]].body) out.push_back(c);
  std::sort(out.begin(), out.end(), [&](int a, int b) { return f.stmts[a].begin < f.stmts[b].begin; });
  return out;
}

PyFacts analyze_python(std::string_view source) {
  PyFacts f;
  f.source = source;
  PyLex raw = lex_python(source);
  f.lex.strings = raw.strings;
  f.lex.error = raw.error;
  f.lex.error_line = raw.error_line;
  for (const PyToken& tok : raw.tokens) splice(raw, tok, f.lex.tokens);
  const auto& t = f.lex.tokens;
  Builder(f).statements();
  const int n = static_cast<int>(f.stmts.size());

  // Scopes and dead code.
  f.func_of.assign(n, -1);
  f.class_of.assign(n, -1);
  f.dead.assign(n, false);
  std::vector<int> def_index(n, -1), class_index(n, -1);
  for (int s = 0; s < n; ++s) {
    PyStmt& st = f.stmts[s];
    if (st.kw == "class") {
      PyClass c;
      c.name = st.begin + 1 < st.end ? t[st.begin + 1].text : "";
      c.stmt = s;
      class_index[s] = static_cast<int>(f.classes.size());
      f.classes.push_back(c);
    }
    if (st.kw == "def") {
      PyFunc fn;
      int k = st.begin;
      while (k < st.end && !is_name(t[k], "def")) ++k;
      fn.name = k + 1 < st.end ? t[k + 1].text : "";
      fn.stmt = s;
      def_index[s] = static_cast<int>(f.funcs.size());
      f.funcs.push_back(fn);
    }
  }
  for (int s = 0; s < n; ++s) {
    int p = f.stmts[s].parent;
    for (int q = p; q >= 0; q = f.stmts[q].parent) {
      if (f.func_of[s] < 0 && def_index[q] >= 0) f.func_of[s] = def_index[q];
      if (f.class_of[s] < 0 && class_index[q] >= 0) f.class_of[s] = class_index[q];
    }
    const PyStmt& st = f.stmts[s];
    if (st.kw == "if" && p < 0) {
      bool name = false, main = false;
      for (int k = st.begin; k < st.end; ++k) {
        if (is_name(t[k], "__name__")) name = true;
        if (t[k].kind == PyKind::String && t[k].str >= 0 && f.lex.strings[t[k].str].value.text == "__main__") main = true;
      }
      if (name && main)
        for (int d : subtree(f, s)) f.dead[d] = true;
    }
  }
  // Decorators are not in any body: give them their def's scope.
  for (int s = 0; s < n; ++s)
    for (int d : f.stmts[s].decorators) {
      f.func_of[d] = f.func_of[s];
      f.class_of[d] = f.class_of[s];
      f.dead[d] = f.dead[s];
    }

  // Imports.
  for (int s = 0; s < n; ++s) {
    const PyStmt& st = f.stmts[s];
    if (st.kw == "import") {
      for (auto [a, e] : split_commas(t, st.begin + 1, st.end)) {
        int next = a;
        Path mod = dotted_at(t, a, e, &next);
        if (mod.empty()) continue;
        if (next + 1 < e && is_name(t[next], "as")) f.imports[t[next + 1].text] = mod;
        else f.imports[mod[0]] = Path{mod[0]};
      }
    } else if (st.kw == "from") {
      int k = st.begin + 1;
      std::string dots;
      while (k < st.end && (is_op(t[k], ".") || is_op(t[k], "..."))) dots += t[k++].text;
      int next = k;
      Path mod = dotted_at(t, k, st.end, &next);
      if (!dots.empty()) mod.insert(mod.begin(), dots);
      if (next >= st.end || !is_name(t[next], "import")) continue;
      int a = next + 1, e = st.end;
      if (a < e && is_op(t[a], "(")) {
        ++a;
        if (e - 1 > a && is_op(t[e - 1], ")")) --e;
      }
      for (auto [x, y] : split_commas(t, a, e)) {
        if (t[x].kind != PyKind::Name) continue;
        Path full = mod;
        full.push_back(t[x].text);
        std::string local = (y - x >= 3 && is_name(t[x + 1], "as")) ? t[x + 2].text : t[x].text;
        f.imports[local] = full;
      }
    }
  }

  // Classes, functions, parameters, decorators.
  for (int s = 0; s < n; ++s) {
    const PyStmt& st = f.stmts[s];
    if (class_index[s] >= 0) {
      PyClass& c = f.classes[class_index[s]];
      int k = st.begin + 2;
      if (k < st.end && is_op(t[k], "(")) {
        int close = match_bracket(t, k);
        for (auto [a, e] : split_commas(t, k + 1, std::min(close, st.end))) {
          if (e - a >= 2 && t[a + 1].kind == PyKind::Op && t[a + 1].text == "=") continue;  // metaclass=...
          int next = a;
          Path b = dotted_at(t, a, e, &next);
          if (!b.empty()) c.bases.push_back(f.canonical(b));
        }
      }
    }
    if (def_index[s] >= 0) {
      PyFunc& fn = f.funcs[def_index[s]];
      int k = st.begin;
      while (k < st.end && !is_name(t[k], "def")) ++k;
      k += 2;
      if (k < st.end && is_op(t[k], "(")) {
        int close = match_bracket(t, k);
        for (auto [a, e] : split_commas(t, k + 1, std::min(close, st.end))) {
          int x = a;
          while (x < e && (is_op(t[x], "*") || is_op(t[x], "**"))) ++x;
          if (x < e && t[x].kind == PyKind::Name) fn.params.push_back(t[x].text);
        }
      }
      for (int d : st.decorators) {
        int next = f.stmts[d].begin + 1;
        Path p = dotted_at(t, next, f.stmts[d].end, &next);
        p = f.canonical(p);
        if (kernel_decorator(p)) fn.kernel = true;
        fn.decorators.push_back(p);
      }
      int parent = st.parent;
      if (parent >= 0 && class_index[parent] >= 0) {
        fn.cls = class_index[parent];
        f.classes[fn.cls].methods[fn.name] = def_index[s];
      }
    }
  }

  // Assignments (and the bindings of for/with headers, kept in the same shape).
  for (int s = 0; s < n; ++s) {
    const PyStmt& st = f.stmts[s];
    if (f.dead[s]) continue;
    if (!st.compound && st.kw.empty()) {
      std::vector<int> eqs;
      std::string op;
      int depth = 0;
      for (int k = st.begin; k < st.end; ++k) {
        const PyToken& x = t[k];
        if (depth == 0 && is_name(x, "lambda")) break;
        if (x.kind != PyKind::Op) continue;
        if (x.text == "(" || x.text == "[" || x.text == "{") ++depth;
        if (x.text == ")" || x.text == "]" || x.text == "}") --depth;
        if (depth != 0) continue;
        if (x.text == "=" || (x.text.size() >= 2 && x.text.back() == '=' && x.text != "==" && x.text != "!=" &&
                              x.text != "<=" && x.text != ">=" && x.text != ":=")) {
          eqs.push_back(k);
          op = x.text;
        }
      }
      if (eqs.empty()) continue;
      PyAssign a;
      a.stmt = s;
      a.op = op;
      a.line = st.line;
      int from = st.begin;
      for (int eq : eqs) {
        int to = eq;
        // x: int = 3 -> the target is x
        for (int k = from, d = 0; k < eq; ++k) {
          if (t[k].kind == PyKind::Op && (t[k].text == "(" || t[k].text == "[" || t[k].text == "{")) ++d;
          if (t[k].kind == PyKind::Op && (t[k].text == ")" || t[k].text == "]" || t[k].text == "}")) --d;
          if (d == 0 && is_op(t[k], ":")) {
            to = k;
            break;
          }
        }
        for (auto r : split_commas(t, from, to)) {
          while (r.first < r.second && (is_op(t[r.first], "(") || is_op(t[r.first], "[") || is_op(t[r.first], "*"))) ++r.first;
          while (r.second > r.first && (is_op(t[r.second - 1], ")") || is_op(t[r.second - 1], ","))) --r.second;
          if (r.first < r.second) a.targets.push_back(r);
        }
        from = eq + 1;
      }
      a.value_begin = eqs.back() + 1;
      a.value_end = st.end;
      f.assigns.push_back(std::move(a));
    } else if (st.kw == "for" || st.kw == "with") {
      PyAssign a;
      a.stmt = s;
      a.op = st.kw;
      a.line = st.line;
      int depth = 0;
      if (st.kw == "for") {
        for (int k = st.begin + 1; k < st.end; ++k) {
          if (t[k].kind == PyKind::Op && (t[k].text == "(" || t[k].text == "[")) ++depth;
          if (t[k].kind == PyKind::Op && (t[k].text == ")" || t[k].text == "]")) --depth;
          if (depth == 0 && is_name(t[k], "in")) {
            for (auto r : split_commas(t, st.begin + 1, k)) a.targets.push_back(r);
            a.value_begin = k + 1;
            a.value_end = st.end;
            break;
          }
        }
      } else {
        for (auto [x, y] : split_commas(t, st.begin + 1, st.end))
          for (int k = x; k < y; ++k)
            if (is_name(t[k], "as") && k + 1 < y) {
              PyAssign w = a;
              w.targets.push_back({k + 1, y});
              w.value_begin = x;
              w.value_end = k;
              f.assigns.push_back(w);
            }
        continue;
      }
      if (!a.targets.empty()) f.assigns.push_back(std::move(a));
    }
  }

  // Which names lead to compiled code: loaders' results, kernels, and what is bound to them.
  for (auto& fn : f.funcs)
    if (fn.kernel) {
      f.kernel_defined = true;
      f.handles.insert(fn.cls >= 0 ? "@" + f.classes[fn.cls].name + "." + fn.name : fn.name);
    }
  for (int s = 0; s < n; ++s) {
    if (f.dead[s] || f.stmts[s].kw == "@") continue;
    for (const PyCall& c : calls_in(f, f.stmts[s].begin, f.stmts[s].end))
      if (f.is_loader(c.canonical)) f.kernel_defined = true;
  }
  for (int round = 0; round < 12; ++round) {
    size_t before = f.handles.size() + f.factories.size();
    for (const PyAssign& a : f.assigns) {
      bool handle = false;
      bool lambda = false;
      for (int k = a.value_begin; k < a.value_end; ++k) lambda = lambda || is_name(t[k], "lambda");
      for (const PyCall& c : calls_in(f, a.value_begin, a.value_end))
        if (f.is_loader(c.canonical)) handle = true;
      for (const PyRef& r : refs_in(f, a.value_begin, a.value_end)) {
        if (!f.is_handle(r.path, a.stmt)) continue;
        bool kernel_class = r.path.size() == 1 && f.class_index(r.path[0]) >= 0;
        if (kernel_class || !r.called || lambda) handle = true;
      }
      if (!handle) continue;
      for (auto [x, y] : a.targets) {
        int next = x;
        Path p = dotted_at(t, x, y, &next);
        if (!p.empty() && next == y && !(p.size() == 1 && p[0] == "self")) f.handles.insert(f.handle_key(p, a.stmt));
      }
    }
    for (size_t i = 0; i < f.funcs.size(); ++i) {
      PyFunc& fn = f.funcs[i];
      std::string key = fn.cls >= 0 ? "@" + f.classes[fn.cls].name + "." + fn.name : fn.name;
      for (int s : subtree(f, fn.stmt)) {
        if (s == fn.stmt || f.dead[s] || f.func_of[s] != static_cast<int>(i)) continue;
        const PyStmt& st = f.stmts[s];
        if (!fn.calls_kernel) {
          for (const PyCall& c : calls_in(f, st.begin, st.end))
            if (f.is_kernel_call(c, s)) fn.calls_kernel = true;
          if (fn.calls_kernel) f.handles.insert(key);
        }
        if (st.kw == "return" && fn.cls < 0) {
          bool returns_module = false;
          for (const PyCall& c : calls_in(f, st.begin + 1, st.end))
            if (f.is_loader(c.canonical)) returns_module = true;
          for (const PyRef& r : refs_in(f, st.begin + 1, st.end))
            if (!r.called && f.is_handle(r.path, s)) returns_module = true;
          if (returns_module && !f.factories.count(fn.name)) {
            f.factories.insert(fn.name);
            f.handles.insert(fn.name);
          }
        }
      }
    }
    for (PyClass& c : f.classes) {
      if (c.kernel_module) continue;
      int cls = static_cast<int>(&c - f.classes.data());
      // Its forward/__call__/apply, or any other method but __init__, reaches compiled code
      // (an autograd.Function, a module, a wrapper class whose hooks run the kernel).
      for (const auto& [name, fi] : c.methods)
        if (name != "__init__" && f.funcs[fi].calls_kernel) c.kernel_module = true;
      for (const char* m : {"forward", "__call__", "apply"}) {
        int fi = f.find_method(cls, m);
        if (fi >= 0 && f.funcs[fi].calls_kernel) c.kernel_module = true;
      }
      if (c.kernel_module) f.handles.insert(c.name);
    }
    if (f.handles.size() + f.factories.size() == before) break;
  }
  return f;
}

}  // namespace kbv
