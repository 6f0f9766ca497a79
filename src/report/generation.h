// What `kbv generate` recorded about a run folder: the model(s), tokens and cost, summed over its
// `level_L_problem_P_sample_S_response.json` records (docs/GENERATE.md), for the leaderboard.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kbv {

struct GenerationSummary {
  int records = 0;                  // response records read
  std::vector<std::string> models;  // distinct `model` values, in first-seen order
  long long prompt_tokens = 0;      // summed over the records that report them
  long long completion_tokens = 0;
  int with_tokens = 0;              // records with both token counts
  double cost_usd = 0;              // summed over the records with a cost
  int with_cost = 0;                // records with a cost
  std::vector<std::string> unreadable;  // "<file>: <why>" for records that are not JSON objects
};

// Reads the response records directly in `dir` (not its subfolders). No records: records == 0.
GenerationSummary read_generation(const std::filesystem::path& dir);

}  // namespace kbv
