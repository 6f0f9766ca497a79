// The analysis under the C++/CUDA rules (lint/cpp_analysis.h): units, macros, function
// definitions, their calls, launches and stores, and where findings go.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lint/cpp_analysis.h"

namespace kbv::cpprules {
namespace {

const std::set<std::string> kKeywords = {"if",     "for",    "while",   "switch",   "catch",        "return",
                                         "sizeof", "alignof", "decltype", "static_assert", "__attribute__",
                                         "defined", "noexcept", "throw",  "new",      "delete",       "typeid",
                                         "alignas", "__launch_bounds__", "__align__", "constexpr", "requires"};

const std::set<std::string> kAssignOps = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};

const std::set<std::string> kLaunchCalls = {"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaLaunchKernelEx",
                                            "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
                                            "cudaGraphLaunch", "cudaLaunchKernelExC"};

}  // namespace

void CppAnalysis::run() {
  for (const CppUnit& u : s_.units) {
    Unit x;
    x.src = &u;
    x.lex = lex_cpp(u.text.text);
    units_.push_back(std::move(x));
  }
  for (const Unit& u : units_)  // units_ does not change from here on
    for (const CppMacro& m : u.lex.macros) macros_[m.name] = &m;
  for (size_t u = 0; u < units_.size(); ++u) functions(static_cast<int>(u));
  for (const Fn& f : fns_) names_.insert(f.name);
  for (Fn& f : fns_) analyse(f);
  aten_rule();
  thread_rule();
  stream_rule();
  tamper_rule();
  cache_rule();
  precision_rule();
}

void CppAnalysis::report(const std::string& rule, const std::string& severity, const std::string& cheat, int unit, int line,
                         const std::string& message) {
  const CppUnit& u = *units_[unit].src;
  int file_line = u.text.file_line(line);
  if (!reported_.insert({rule, file_line + u.line_offset}).second) return;
  Finding f;
  f.rule = rule;
  f.severity = severity;
  f.cheat = cheat;
  f.file = u.file;
  f.line = file_line + u.line_offset;
  f.code = line_of(u.file_text.empty() ? solution_ : std::string_view(u.file_text), file_line);
  f.message = message;
  out_.push_back(std::move(f));
}

int CppAnalysis::match_forward(const Tokens& t, int open, const char* o, const char* c) const {
  int depth = 0;
  for (int k = open; k < static_cast<int>(t.size()); ++k) {
    if (is_p(t[k], o)) ++depth;
    if (is_p(t[k], c) && --depth == 0) return k;
  }
  return static_cast<int>(t.size()) - 1;
}

// Function definitions at namespace or class scope (bodies of other braces are skipped).
void CppAnalysis::functions(int u) {
  const Tokens& t = units_[u].lex.tokens;
  const int n = static_cast<int>(t.size());
  int stmt_start = 0;
  for (int k = 0; k < n; ++k) {
    const CppToken& x = t[k];
    if (x.kind == CppKind::Directive) {
      stmt_start = k + 1;
      continue;
    }
    if (is_p(x, ";")) note_cache_decl(u, t, stmt_start, k, true);
    if (is_p(x, ";") || is_p(x, "}") || (is_p(x, ":") && k > 0 && t[k - 1].kind == CppKind::Ident &&
                                          (t[k - 1].text == "public" || t[k - 1].text == "private" ||
                                           t[k - 1].text == "protected"))) {
      stmt_start = k + 1;
      continue;
    }
    if (!is_p(x, "{")) continue;
    bool scope = false;  // namespace, extern "C", class/struct body: keep looking inside
    for (int j = stmt_start; j < k; ++j)
      if (is_id(t[j], "namespace") || is_id(t[j], "extern") || is_id(t[j], "class") || is_id(t[j], "struct") ||
          is_id(t[j], "union"))
        scope = true;
    int name_at = -1;
    if (!scope) {
      // ... name ( params ) [qualifiers] {
      int j = k - 1;
      while (j > stmt_start && (t[j].kind == CppKind::Ident || is_p(t[j], "&") || is_p(t[j], "&&") ||
                                is_p(t[j], "->") || is_p(t[j], "::") || is_p(t[j], "*") || is_p(t[j], ">") ||
                                is_p(t[j], "<") || is_p(t[j], ",")))
        --j;  // const, noexcept, override, -> trailing return type
      if (j >= stmt_start && is_p(t[j], ")")) {
        int depth = 0, open = j;
        for (; open >= stmt_start; --open) {
          if (is_p(t[open], ")")) ++depth;
          if (is_p(t[open], "(") && --depth == 0) break;
        }
        if (open > stmt_start && t[open - 1].kind == CppKind::Ident && !kKeywords.count(t[open - 1].text))
          name_at = open - 1;
      }
    }
    if (scope) {
      stmt_start = k + 1;
      continue;
    }
    int close = match_forward(t, k, "{", "}");
    if (name_at >= 0) {
      Fn f;
      f.name = t[name_at].text;
      f.unit = u;
      f.line = t[name_at].line;
      for (int j = stmt_start; j < name_at; ++j) {
        if (is_id(t[j], "__global__")) f.kernel = true;
        if (is_id(t[j], "__device__")) f.device = true;
      }
      std::set<std::string> expanding;
      expand(t, k + 1, close, f.body, expanding, -1);
      fns_.push_back(std::move(f));
    } else {
      note_cache_decl(u, t, stmt_start, k, true);  // a variable's initializer, an enum...
    }
    k = close;
    stmt_start = k + 1;
  }
  // File-scope and function-local statics holding tensors.
  for (int k = 0; k < n; ++k)
    if (is_p(t[k], ";")) {
      int j = k - 1;
      while (j >= 0 && !is_p(t[j], ";") && !is_p(t[j], "{") && !is_p(t[j], "}") && t[j].kind != CppKind::Directive) --j;
      note_cache_decl(u, t, j + 1, k, false);
    }
}

// [b, e) is a declaration: "[static] ... Tensor ... name [= ...]" -> a tensor kept across calls
// (static anywhere, or any declaration at file scope).
void CppAnalysis::note_cache_decl(int u, const Tokens& t, int b, int e, bool file_scope) {
  bool is_static = false, tensor = false;
  int name = -1;
  for (int j = b; j < e; ++j) {
    if (is_id(t[j], "static")) is_static = true;
    if (t[j].kind == CppKind::Ident && t[j].text.find("Tensor") != std::string::npos) tensor = true;
    if (is_p(t[j], "(")) return;  // a function's declaration
    if (is_p(t[j], "=") || is_p(t[j], "{")) break;
    if (t[j].kind == CppKind::Ident) name = j;
  }
  if (!(is_static || file_scope) || !tensor || name < 0) return;
  for (int j = b; j < e; ++j)
    if (is_id(t[j], "using") || is_id(t[j], "typedef") || is_id(t[j], "return")) return;
  if (t[name].text.find("Tensor") != std::string::npos) return;
  cache_vars_.emplace(t[name].text, std::make_pair(u, t[name].line));
}

void CppAnalysis::expand(const Tokens& t, int b, int e, Tokens& out, std::set<std::string>& expanding, int line) {
  for (int k = b; k < e; ++k) {
    const CppToken& x = t[k];
    if (x.kind == CppKind::Directive) continue;
    auto it = x.kind == CppKind::Ident ? macros_.find(x.text) : macros_.end();
    if (it != macros_.end() && !expanding.count(x.text) && expanding.size() < 4) {
      expanding.insert(x.text);
      expand(it->second->body, 0, static_cast<int>(it->second->body.size()), out, expanding, line >= 0 ? line : x.line);
      expanding.erase(x.text);
      continue;  // a function-like macro's arguments follow as ordinary tokens
    }
    CppToken y = x;
    if (line >= 0) y.line = line;
    out.push_back(std::move(y));
  }
}

void CppAnalysis::analyse(Fn& f) {
  const Tokens& t = f.body;
  const int n = static_cast<int>(t.size());
  if (f.kernel) f.own_work = true;
  for (int k = 0; k < n; ++k) {
    const CppToken& x = t[k];
    if (is_p(x, "<<<")) {
      f.own_work = true;
      int j = k - 1;
      if (j >= 0 && is_p(t[j], ">")) {  // kernel<T><<<
        int depth = 0;
        for (; j >= 0; --j) {
          if (is_p(t[j], ">")) ++depth;
          if (is_p(t[j], "<") && --depth == 0) break;
        }
        --j;
      }
      if (j >= 0 && t[j].kind == CppKind::Ident) f.launched.push_back(t[j].text);
      continue;
    }
    if ((is_id(x, "for") || is_id(x, "while") || is_id(x, "do")) && loop_stores(t, k)) {
      f.own_work = true;
    }
    if (x.kind != CppKind::Ident || k + 1 >= n) continue;
    int open = k + 1;
    if (is_p(t[open], "<")) {  // name<...>(
      int depth = 0, j = open;
      for (; j < n && j < open + 24; ++j) {
        if (is_p(t[j], "<")) ++depth;
        if (is_p(t[j], ">") && --depth == 0) break;
        if (is_p(t[j], ";") || is_p(t[j], "{")) break;
      }
      if (j < n - 1 && is_p(t[j], ">") && is_p(t[j + 1], "(")) open = j + 1;
    }
    if (!is_p(t[open], "(") || kKeywords.count(x.text)) continue;
    Call c;
    c.qual.push_back(x.text);
    c.line = x.line;
    int j = k;
    while (j >= 2 && is_p(t[j - 1], "::") && t[j - 2].kind == CppKind::Ident) {
      j -= 2;
      c.qual.insert(c.qual.begin(), t[j].text);
    }
    if (j >= 1 && is_p(t[j - 1], "::")) c.qual.insert(c.qual.begin(), "");
    if (j >= 1 && (is_p(t[j - 1], ".") || is_p(t[j - 1], "->"))) c.member = true;
    if (!c.member && kLaunchCalls.count(x.text)) {
      f.own_work = true;
    }
    f.calls.push_back(std::move(c));
  }
}

// A loop at k (for/while/do) whose body assigns through a subscript, '->' or a dereference.
bool CppAnalysis::loop_stores(const Tokens& t, int k) const {
  const int n = static_cast<int>(t.size());
  int b = k + 1;
  if (!is_id(t[k], "do")) {
    if (b >= n || !is_p(t[b], "(")) return false;
    b = match_forward(t, b, "(", ")") + 1;
  }
  if (b >= n) return false;
  int e;
  if (is_p(t[b], "{")) {
    e = match_forward(t, b, "{", "}");
  } else {
    int depth = 0;
    for (e = b; e < n; ++e) {
      if (is_p(t[e], "(") || is_p(t[e], "{")) ++depth;
      if (is_p(t[e], ")") || is_p(t[e], "}")) --depth;
      if (depth <= 0 && is_p(t[e], ";")) break;
    }
  }
  bool assigns = false, memory = false;
  for (int j = b; j < e && j < n; ++j) {
    if (t[j].kind != CppKind::Punct) continue;
    if (kAssignOps.count(t[j].text)) assigns = true;
    if (t[j].text == "[" || t[j].text == "->") memory = true;
    if (t[j].text == "*" && j > 0 &&
        (t[j - 1].kind == CppKind::Punct && t[j - 1].text != ")" && t[j - 1].text != "]"))
      memory = true;
  }
  return assigns && memory;
}

}  // namespace kbv::cpprules
