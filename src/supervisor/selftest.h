// `kbv selftest`: the example corpus (examples/manifest.json) evaluated, expected verdicts
// against the verdicts kbv gave, as a confusion matrix and per cheat class.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv {

struct SelftestOptions {
  std::filesystem::path manifest;     // paths inside are relative to the manifest's repository root
  std::filesystem::path root;         // where problem/solution paths start (default: manifest's parent's parent)
  std::string device;                 // only entries of this device; empty: every device present
  EvalOptions eval;
  int build_jobs = 2;                 // candidates compiled at once, ahead of their evaluation
};

// Runs the corpus; prints progress and the matrix to stderr; returns the JSON summary
// ({"entries": [...], "matrix": {...}, "classes": {...}, "mismatches": N, "skipped": N}).
nlohmann::json run_selftest(const SelftestOptions& options, std::string& error);

}  // namespace kbv
