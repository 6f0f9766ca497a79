// Python rules on where the compute happens (lint/python_rules.h): T11 calling the reference,
// falling back to PyTorch, a kernel never called; T12 precision downgrade.
#include <set>

#include <fmt/format.h>

#include "lint/ops.h"
#include "lint/python_rules.h"

namespace kbv::pyrules {

// --- T11: calling the reference, falling back to PyTorch, no kernel -------------------------
void PyRules::reference_rule() {
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
int PyRules::callee(const PyCall& c, int s) const {
  if (c.path.size() == 2 && c.path[0] == "self" && f_.class_of[s] >= 0) return f_.find_method(f_.class_of[s], c.path[1]);
  if (c.path.size() == 1)
    for (size_t k = 0; k < f_.funcs.size(); ++k)
      if (f_.funcs[k].cls < 0 && f_.funcs[k].name == c.path[0]) return static_cast<int>(k);
  return -1;
}

void PyRules::fallback_rule() {
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

void PyRules::kernel_rule() {
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
void PyRules::precision_rule() {
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

}  // namespace kbv::pyrules
