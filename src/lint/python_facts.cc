// What a Python module holds (lint/python_syntax.h, analyze_python), pass by pass over its
// statements: scopes and dead code, imports, classes and functions, assignments, and which names
// lead to compiled code. The statements themselves and the queries over them: python_syntax.cc.
#include "lint/python_syntax.h"

#include <algorithm>

#include "lint/python_statements.h"

namespace kbv {
namespace {

// Kernel decorators: the function they decorate is compiled code.
bool kernel_decorator(const Path& p) {
  std::string j = join(p);
  for (const char* k : {"triton.jit", "triton.autotune", "triton.heuristics", "numba.cuda.jit", "numba.jit",
                        "numba.njit", "cutlass.cute.kernel", "cutlass.cute.jit", "cute.kernel", "cute.jit",
                        "tilelang.jit", "warp.kernel"})
    if (j == k || j.rfind(std::string(k) + ".", 0) == 0) return true;
  return false;
}

// The statement index -> function (def_index) or class (class_index) it defines, -1 for others.
struct Defs {
  std::vector<int> def_index, class_index;
};

// Scopes and dead code: the functions and classes, each statement's innermost ones, and what
// runs only under `if __name__ == "__main__":`.
Defs scopes_and_dead_code(PyFacts& f) {
  const auto& t = f.lex.tokens;
  const int n = static_cast<int>(f.stmts.size());
  f.func_of.assign(n, -1);
  f.class_of.assign(n, -1);
  f.dead.assign(n, false);
  Defs defs{std::vector<int>(n, -1), std::vector<int>(n, -1)};
  std::vector<int>& def_index = defs.def_index;
  std::vector<int>& class_index = defs.class_index;
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
  return defs;
}

// Imports: the local name -> the module path it stands for.
void imports(PyFacts& f) {
  const auto& t = f.lex.tokens;
  const int n = static_cast<int>(f.stmts.size());
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
}

// Classes (bases), functions (parameters, decorators, kernels, methods of their class).
void classes_and_functions(PyFacts& f, const Defs& defs) {
  const auto& t = f.lex.tokens;
  const int n = static_cast<int>(f.stmts.size());
  const std::vector<int>& def_index = defs.def_index;
  const std::vector<int>& class_index = defs.class_index;
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
}

// Assignments (and the bindings of for/with headers, kept in the same shape).
void assignments(PyFacts& f) {
  const auto& t = f.lex.tokens;
  const int n = static_cast<int>(f.stmts.size());
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
}

// Which names lead to compiled code: loaders' results, kernels, and what is bound to them.
void compiled_code(PyFacts& f) {
  const auto& t = f.lex.tokens;
  const int n = static_cast<int>(f.stmts.size());
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
}

}  // namespace

PyFacts analyze_python(std::string_view source) {
  PyFacts f = python_statements(source);
  const Defs defs = scopes_and_dead_code(f);
  imports(f);
  classes_and_functions(f, defs);
  assignments(f);
  compiled_code(f);
  return f;
}

}  // namespace kbv
