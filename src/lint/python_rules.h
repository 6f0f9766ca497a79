// The rules over the candidate's Python (lint/rules.h, python_rules): one class whose members are
// spread over files by what they detect. python_rules.cc: the shared analysis (findings, reachable
// functions, what counts as PyTorch compute); python_rules_tamper.cc: T4 patching, T14 inspection
// and tampering, T13 seeding; python_rules_hidden_work.cc: T5 caches, T2 threads, T1 streams, T3
// deferred outputs; python_rules_compute.cc: T11 reference, fallback and kernel calls, T12
// precision. Internal to src/lint/.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lint/rules.h"

namespace kbv::pyrules {

inline bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

inline bool in(const std::string& s, std::initializer_list<const char*> set) {
  for (const char* x : set)
    if (s == x) return true;
  return false;
}

class PyRules {
 public:
  PyRules(const PyFacts& f, const std::string& file, int offset, const std::string& precision,
          std::vector<Finding>& out)
      : f_(f), t_(f.t()), file_(file), offset_(offset), precision_(precision), out_(out) {}

  void run();

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
              const std::string& message);

  // Live statements (not under `if __name__ == "__main__":`), imports excluded.
  template <typename F>
  void each_stmt(F fn) const {
    for (int s = 0; s < static_cast<int>(f_.stmts.size()); ++s) {
      const PyStmt& st = f_.stmts[s];
      if (f_.dead[s] || st.kw == "import" || st.kw == "from") continue;
      fn(s, st);
    }
  }

  // --- the shared analysis (python_rules.cc) --------------------------------------------------
  std::string fn_name(int s) const;
  // Statements whose innermost function is `fi` (nested functions excluded), the def itself not.
  std::vector<int> body_of(int fi) const;
  void layers();     // layers_
  void reachable();  // reach_
  // Is there PyTorch compute in tokens [b, e) of statement s? Names the first one.
  bool torch_compute(int s, int b, int e, std::string* what, int* line) const;

  // --- against the harness (python_rules_tamper.cc) -------------------------------------------
  bool allowed_setting(const std::string& j) const;
  void patched(const Path& canon, int line, const std::string& how);
  // Names bound to a module or to something in one (`_m = torch`, `_m = torch.cuda`,
  // `_m = sys.modules["torch"]`): patching through the alias is patching the module.
  std::map<std::string, Path> module_aliases() const;
  void patch_rule();       // T4
  void inspection_rule();  // T14
  void tamper_rule();      // T14
  void dynamic_rule();     // T14
  void rng_rule();         // T13
  void regenerate_rule();  // T13

  // --- work the timer does not see (python_rules_hidden_work.cc) ------------------------------
  // A key made from an input's identity, address, shape or content in `fi`'s body, the most
  // specific one first: "x.data_ptr" and its line.
  std::pair<std::string, int> input_key(int fi) const;
  // Statements that run whenever `r` (in function fi) does: earlier siblings (compound ones by
  // their header, with/try bodies whole), the headers above it, and r itself.
  std::vector<std::pair<int, int>> must_run(int fi, int r) const;
  // The value of `return` reads state kept across calls: "self._cache[key]", a module-level dict.
  std::string persistent_read(int fi, int r) const;
  void cache_rule();     // T5
  void thread_rule();    // T2
  void stream_rule();    // T1
  void subclass_rule();  // T3

  // --- where the compute happens (python_rules_compute.cc) ------------------------------------
  void reference_rule();  // T11
  // A function defined in the file that `c` calls from statement s (self.m or a module function).
  int callee(const PyCall& c, int s) const;
  void fallback_rule();   // T11
  void kernel_rule();     // T11
  void precision_rule();  // T12
};

}  // namespace kbv::pyrules
