// `kbv lint`: static analysis of a candidate solution (its Python, and the C++/CUDA it compiles)
// against the known ways to cheat (DESIGN.md, docs/POLICY.md). Run by every `kbv eval` before
// the candidate is built; under the strict policy a `reject` finding means it never runs.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lint/finding.h"

namespace kbv {

struct LintOptions {
  Policy policy = Policy::strict;
  std::string file;                 // the solution as named in evidence
  std::filesystem::path base_dir;   // where load(sources=[...]) paths start (the solution's folder)
  int line_offset = 0;              // the code is a block starting at line 1 + offset of `file`
  std::string precision = "fp32";   // the evaluated precision: reduced types at or above it are no downgrade
};

struct LintReport {
  std::string file;
  Policy policy = Policy::strict;
  std::vector<Finding> findings;    // rejecting ones first, then by file and line
  std::vector<std::string> units;   // the C++/CUDA read: "cuda_sources at line 6 (31 lines)"

  bool rejected() const;            // a finding with severity "reject"
  const Finding* first_reject() const;
  // "file:line: rule (T11): message" of the first reject, plus how many more there are.
  std::string rejection_message() const;
  nlohmann::json findings_json() const;
  nlohmann::json to_json() const;   // {"file", "policy", "rejected", "units", "findings"}
};

// The rules, for `kbv lint --rules` and docs/POLICY.md.
struct RuleInfo {
  const char* id;
  const char* cheat;     // "T4"; "" for findings about the analysis itself
  const char* severity;  // under the strict policy: "reject" or "warn" (some rules give either)
  const char* what;      // one line for `kbv lint --rules` and docs/POLICY.md
};
const std::vector<RuleInfo>& lint_rules();
const RuleInfo* find_rule(std::string_view id);

LintReport lint_solution(std::string_view code, const LintOptions& options);

// Whether reduced-precision evidence ("__nv_bfloat16", "torch.float16", "mma .tf32", "wmma")
// computes below `precision` (fp32, bf16, fp16). In fp32 all of it does. In bf16 or fp16 only fp8
// does: a kernel that dispatches on both 16-bit types runs the evaluated one, and TF32,
// tensor-core math and autocast are not below 16 bits. (Fast-math flags warn in every precision.)
bool below_precision(const std::string& what, const std::string& precision);

// Lenient policy: every finding becomes a warning (upstream-like: nothing is rejected statically).
void apply_policy(std::vector<Finding>& findings, Policy policy);

}  // namespace kbv
