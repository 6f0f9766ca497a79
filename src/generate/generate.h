// `kbv generate`: a KernelBench run folder made by prompting a model on every problem of a
// dataset, resumable and idempotent. Per sample it writes
//   level_L_problem_P_sample_S_kernel.py    the extracted code (KernelBench's layout), if any
//   level_L_problem_P_sample_S_response.md  the model's raw answer (reasoning in <think> tags)
//   level_L_problem_P_sample_S_response.json  what was asked and answered: status, model,
//                                           prompt, usage, cost, latency, attempts
// and each prompt sent under prompts/. A sample is done when its kernel file exists or its
// sidecar says no_code_block; a re-run fills the others.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "generate/client.h"
#include "generate/prompt.h"
#include "problem/problem.h"
#include "util/outcome.h"

namespace kbv {

struct GenerateOptions {
  std::filesystem::path problems_dir;
  std::filesystem::path run_dir;
  std::optional<int> level;
  ProblemSelection only;                         // --only: a subset of the problems
  std::string only_spec;                         // its text, for messages
  int samples = 5;
  std::string model;
  std::string endpoint = "https://api.openai.com/v1";
  std::string api_key_env = "OPENAI_API_KEY";   // the variable's name; its value is never stored
  std::optional<double> temperature;             // not sent when unset (the endpoint's default)
  std::optional<int> max_tokens;
  std::string reasoning_effort;                  // sent as reasoning_effort when set
  nlohmann::json extra_body = nlohmann::json::object();  // merged into each request body
  int concurrency = 4;
  EndpointOptions http;                          // timeout, retries, backoff (url and key set here)
  PromptOptions prompt;
  std::optional<double> price_input;             // USD per million prompt tokens
  std::optional<double> price_output;            // USD per million completion tokens
  bool dry_run = false;                          // print the first prompt and the plan; send nothing
};

// Every sample generated (ok); some requests or problems failed (incomplete: a re-run retries
// them); bad input: dataset, templates, endpoint (input_error); interrupted. Progress, warnings
// and the dry run's prompt (data) go to `notify`.
Outcome generate_run(const GenerateOptions& options, const Notify& notify);

// The file names of one sample, relative to the run folder.
std::string sample_stem(int level, int problem_id, int sample_id);

}  // namespace kbv
