// `kbv selftest`: the example corpus (examples/manifest.json) evaluated, expected verdicts
// against the verdicts kbv gave, as a confusion matrix and per cheat class.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"
#include "util/outcome.h"

namespace kbv {

struct SelftestOptions {
  std::filesystem::path manifest;     // paths inside are relative to the manifest's repository root
  std::filesystem::path root;         // where problem/solution paths start (default: manifest's parent's parent)
  std::string device;                 // only entries of this device; empty: every device present
  EvalOptions eval;
  // The options given on the command line, canonical (CommonFlags::canonical_options): an entry that
  // names a "protocol" is evaluated as `kbv eval --protocol P` with these after it. Empty: eval's.
  nlohmann::json given = nlohmann::json::object();
  int build_jobs = 2;                 // candidates compiled at once, ahead of their evaluation
  bool static_only = false;           // only the static analysis: no worker, no build, every device
};

struct SelftestResult {
  Outcome outcome;          // input_error: no usable manifest; incomplete: mismatches; interrupted
  nlohmann::json summary;   // null when nothing ran
};

// Runs the corpus; sends each entry's line, the confusion matrix and the matrix per cheat class
// through `notify` (progress lines); the summary is JSON ({"entries": [...], "matrix": {...},
// "classes": {...}, "mismatches": N, "skipped": N}). An entry's "protocol", "policy" ("lenient"),
// "precision", "trials", "flaky_reruns" and "write_cap_mib" apply to it alone. With static_only,
// "got" is "rejected" or "passes_lint" and an entry matches when the static rules reject exactly
// the entries that name a "lint" rule (CUDA entries included: no GPU needed).
SelftestResult run_selftest(const SelftestOptions& options, const Notify& notify);

}  // namespace kbv
