// The analysis under the rules over C++/CUDA sources (lint/rules.h, cpp_rules): the units
// lexed, macros expanded, function definitions with their calls, launches and stores
// (lint/cpp_analysis.cc); the rules themselves are in lint/cpp_rules.cc. Internal to src/lint/.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lint/cpp_lexer.h"
#include "lint/rules.h"

namespace kbv::cpprules {

using Tokens = std::vector<CppToken>;

inline bool is_p(const CppToken& t, std::string_view p) { return t.kind == CppKind::Punct && t.text == p; }
inline bool is_id(const CppToken& t, std::string_view p) { return t.kind == CppKind::Ident && t.text == p; }

struct Unit {
  const CppUnit* src = nullptr;
  CppLex lex;
};

struct Call {
  std::vector<std::string> qual;  // {"at", "relu"}; {"", "write"} for ::write
  bool member = false;
  int line = 0;  // unit text line
};

struct Fn {
  std::string name;
  int unit = 0;
  int line = 0;
  bool kernel = false, device = false;
  Tokens body;  // with macros expanded
  std::vector<Call> calls;
  std::vector<std::string> launched;  // kernels launched with <<<>>>
  bool own_work = false;              // a launch, or a loop that stores through memory
};

// The units, their functions and calls, then the rules over them (run).
class CppAnalysis {
 public:
  CppAnalysis(const RecoveredSources& s, std::string_view solution, const std::string& precision,
              std::vector<Finding>& out)
      : s_(s), solution_(solution), precision_(precision), out_(out) {}

  void run();

 private:
  const RecoveredSources& s_;
  std::string_view solution_;
  const std::string& precision_;
  std::vector<Finding>& out_;
  std::vector<Unit> units_;
  std::map<std::string, const CppMacro*> macros_;
  std::vector<Fn> fns_;
  std::set<std::string> names_;
  std::set<std::pair<std::string, int>> reported_;  // (rule, file line)
  std::map<std::string, std::pair<int, int>> cache_vars_;  // name -> (unit, line)

  // --- the analysis (cpp_analysis.cc) ---------------------------------------------------------
  void report(const std::string& rule, const std::string& severity, const std::string& cheat, int unit, int line,
              const std::string& message);
  int match_forward(const Tokens& t, int open, const char* o, const char* c) const;

  // Function definitions at namespace or class scope (bodies of other braces are skipped).
  void functions(int u);

  // [b, e) is a declaration: "[static] ... Tensor ... name [= ...]" -> a tensor kept across calls
  // (static anywhere, or any declaration at file scope).
  void note_cache_decl(int u, const Tokens& t, int b, int e, bool file_scope);
  void expand(const Tokens& t, int b, int e, Tokens& out, std::set<std::string>& expanding, int line);
  void analyse(Fn& f);

  // A loop at k (for/while/do) whose body assigns through a subscript, '->' or a dereference.
  bool loop_stores(const Tokens& t, int k) const;

  // --- the rules (cpp_rules.cc) ---------------------------------------------------------------
  bool using_namespace_aten(int u) const;

  // "at::relu" for an ATen/torch compute call, "" for anything else.
  std::string aten_compute(const Call& c, bool using_aten) const;
  void aten_rule();

  // Every token of every unit, macro bodies included, with its unit.
  template <typename F>
  void each_token(F fn) const {
    for (size_t u = 0; u < units_.size(); ++u) {
      const Tokens& t = units_[u].lex.tokens;
      for (size_t k = 0; k < t.size(); ++k) fn(static_cast<int>(u), t, static_cast<int>(k));
      for (const CppMacro& m : units_[u].lex.macros)
        for (size_t k = 0; k < m.body.size(); ++k) fn(static_cast<int>(u), m.body, static_cast<int>(k));
    }
  }

  static bool plain_call(const Tokens& t, int k);  // name( not as a member, not std::
  void thread_rule();
  void stream_rule();
  void tamper_rule();
  void cache_rule();
  void precision_rule();
};

}  // namespace kbv::cpprules
