// The report side of the KernelBench-Verified protocol (docs/METRICS.md, "The verified table"):
// the problems a run is not scored on (the denominator), and the paper's tables: per level
// and pooled, best-of-n Correct Speedup, Correctness and fast_p, and the speed winner's memory.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/registry.h"
#include "report/metrics.h"

namespace kbv {

struct RunSummary;

// The protocol name (record.protocol.name) whose reports take KernelBench-Verified's shape and
// denominator. Everything here keys on it through this one function.
inline constexpr const char* kVerifiedProtocolName = kProtocolKernelbenchVerified;
bool is_verified_protocol(const std::string& protocol_name);

// A problem left out of the denominator, and why.
struct Exclusion {
  int level = 0;
  int id = 0;
  std::string name;    // the problem file when known ("23_Conv3d_GroupNorm_Mean.py"), else ""
  std::string kind;    // "degenerate" (any constant passes: the problem measures nothing) or
                       // "unsolvable" (an honest kernel cannot pass it reliably)
  std::string reason;  // what makes it so (the lint finding's message, or the protocol's reason)
  std::string source;  // where the exclusion comes from (a lint JSON file, or the protocol)
};

// KernelBench-Verified's own exclusions (its generate_leaderboard.py EXCLUDED_PIDS): level 2
// problems 23, 80 and 83, whose reference output is constant zero for any input.
std::vector<Exclusion> verified_protocol_exclusions();

// The exclusions a `kbv lint-problems --json` report implies: a problem with an unallowed
// finding of an unsolvable rule (ill_conditioned, nonfinite, nondeterministic, dropout,
// problem_error, output_count) under any distribution, or of rule `constant` under every
// distribution the lint ran (degenerate). `zeros`, `insensitive` and notes never exclude: an
// honest kernel passes such a problem. Error (naming `source` and the offending part) when the
// JSON is not a lint report.
std::vector<Exclusion> exclusions_from_lint(const nlohmann::json& report, const std::string& source,
                                            std::string& error);

// Adds `more` to `list`, one entry per (level, id): a problem excluded by several sources keeps
// the first and names the others' sources after it.
void merge_exclusions(std::vector<Exclusion>& list, const std::vector<Exclusion>& more);

// One scope (a level, or all levels pooled) of the verified table, computed as
// KernelBench-Verified's compute_best_of_n_metrics and compute_paired_memory_metrics do: per
// problem the winner is the first correct sample (by sample id) with the highest speedup
// against the baseline; a correct sample without a speedup never wins, and a problem without a
// winner counts as a failure.
struct VerifiedScope {
  std::string name;  // "level 1" | "all"
  int level = 0;     // 0: all levels pooled
  int problems = 0;  // the denominator, after exclusions
  int winners = 0;   // problems with a correct, timed sample
  int correct_untimed = 0;  // problems with a correct sample but no timed one (counted as failures)
  double correctness = 0;   // winners / problems ("Correctness")
  std::optional<double> speedup;  // geomean of the winners' speedups ("Speedup", Correct Speedup)
  std::array<double, kFastPThresholds.size()> fast_p{};  // winners with speedup > p / problems
  std::array<int, kFastPThresholds.size()> fast_count{};  // winners with speedup > p
  int memory_measured = 0;            // winners with a memory ratio
  int mem_efficient = 0;              // winners with memory ratio > 1
  std::optional<double> mem_eff;      // geomean of the winners' memory ratios ("Mem Eff")
  double mem_efficient_share = 0;     // winners with memory ratio > 1 / problems ("Mem Eff%")
};

struct VerifiedTable {
  std::string baseline;  // the speedup and memory baseline (the report's)
  std::string gate;      // "hidden distributions" | "standard check"
  std::vector<VerifiedScope> scopes;  // one per level, then "all" (always, as the paper's overall table)
};

// The verified table of a summarized run (its samples, after exclusions).
VerifiedTable verified_table(const RunSummary& run);

}  // namespace kbv
