// The statements of a Python module (nested by indentation, strings' fields spliced in) and the
// queries over them (lint/python_syntax.h). What the module holds, pass by pass: python_facts.cc.
#include "lint/python_syntax.h"

#include <algorithm>

#include "lint/python_statements.h"

namespace kbv {
namespace {

const std::set<std::string> kCompound = {"class", "def",     "if",   "elif", "else",
                                         "try",   "except",  "finally", "with", "for", "while"};
const std::set<std::string> kSimpleKw = {"return", "import", "from",  "del",   "global", "nonlocal",
                                         "raise",  "pass",   "assert", "yield", "break", "continue"};
const std::set<std::string> kNotCallee = {"if",  "elif", "while", "return", "in",  "and",    "or",    "not",
                                          "for", "with", "assert", "yield", "lambda", "else", "is", "await",
                                          "del", "raise", "from", "import", "except", "case", "match"};

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

PyFacts python_statements(std::string_view source) {
  PyFacts f;
  f.source = source;
  PyLex raw = lex_python(source);
  f.lex.strings = raw.strings;
  f.lex.error = raw.error;
  f.lex.error_line = raw.error_line;
  for (const PyToken& tok : raw.tokens) splice(raw, tok, f.lex.tokens);
  Builder(f).statements();
  return f;
}

}  // namespace kbv
