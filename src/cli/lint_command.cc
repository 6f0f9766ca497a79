// `kbv lint`: the static analysis of one solution, or the list of its rules.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/output.h"
#include "lint/lint.h"
#include "supervisor/run.h"

namespace kbv::cli {

namespace {

// One finding per line (file:line: severity rule (Tn): message), or the JSON report.
// Exit code 0: clean or warnings only, 1: rejected, 2: the file cannot be read.
int lint_one(const std::string& path, const std::string& policy, const std::string& precision, bool as_json) {
  kbv::SolutionSource s = kbv::load_solution(path);
  if (!s.ok) {
    std::fprintf(stderr, "kbv lint: %s\n", s.error.c_str());
    return 2;
  }
  kbv::LintReport r = kbv::lint_candidate(s, path, *kbv::parse_policy(policy), precision);
  if (as_json) {
    std::cout << r.to_json().dump(2) << "\n";
  } else {
    for (const auto& f : r.findings)
      std::printf("%s:%d: %s %s%s: %s\n", f.file.c_str(), f.line, f.severity.c_str(), f.rule.c_str(),
                  f.cheat.empty() ? "" : (" (" + f.cheat + ")").c_str(), f.message.c_str());
    size_t warns = r.findings.size();
    for (const auto& f : r.findings) warns -= f.severity == "reject";
    std::printf("%s: %s (%s policy; %zu C++/CUDA source%s read, %zu warning%s)\n", path.c_str(),
                r.rejected() ? "rejected" : r.findings.empty() ? "clean" : "not rejected", policy.c_str(),
                r.units.size(), r.units.size() == 1 ? "" : "s", warns, warns == 1 ? "" : "s");
  }
  return r.rejected() ? 1 : 0;
}

void list_rules() {
  for (const auto& r : kbv::lint_rules())
    std::printf("%-20s %-4s %-7s %s\n", r.id, *r.cheat ? r.cheat : "-", r.severity, r.what);
}

}  // namespace

Command add_lint_command(CLI::App& app) {
  struct State {
    std::string file, policy = "strict", precision = "fp32";
    bool json = false, list = false;
  };
  auto s = std::make_shared<State>();
  auto* lint = app.add_subcommand(
      "lint", "static analysis of a solution's Python and of the C++/CUDA it compiles, against the known cheats");
  lint->add_option("solution", s->file, "a solution file (.py, or a model's raw answer .md/.txt)");
  lint->add_flag("--json", s->json, "print the report as JSON (file, policy, rejected, units, findings)");
  lint->add_option("--policy", s->policy, "strict (reject findings reject) or lenient (all are warnings)")
      ->check(CLI::IsMember({"strict", "lenient"}))
      ->capture_default_str();
  lint->add_option("--precision", s->precision,
                   "fp32, bf16 or fp16: the evaluated precision (its own type is no precision downgrade)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  lint->add_flag("--rules", s->list, "list the rules: id, cheat class, severity, what they look for");
  return {lint, [s]() {
            if (s->list) {
              list_rules();
              return 0;
            }
            if (s->file.empty()) {
              std::fprintf(stderr, "kbv lint: give a solution file (or --rules)\n");
              return 2;
            }
            return lint_one(s->file, s->policy, s->precision, s->json);
          }};
}

}  // namespace kbv::cli
