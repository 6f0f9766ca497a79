#include "cli/generate_command.h"

#include <cstdio>
#include <optional>
#include <string>

#ifdef KBV_WITH_GENERATE
#include <nlohmann/json.hpp>

#include "generate/generate.h"
#endif
#include "cli/output.h"
#include "cli/parse.h"

namespace kbv::cli {

#ifdef KBV_WITH_GENERATE

std::unique_ptr<GenerateCommand> add_generate_command(CLI::App& app) {
  auto cmd = std::make_unique<GenerateCommand>();
  auto* g = app.add_subcommand("generate",
                               "prompt a model (any OpenAI-compatible endpoint) on every problem: a KernelBench run folder");
  cmd->app = g;
  auto o = std::make_shared<GenerateOptions>();
  o->prompt.dir = KBV_PROMPTS_DIR;
  auto prompts_dir = std::make_shared<std::string>();
  auto extra_body = std::make_shared<std::string>();
  auto problems = std::make_shared<std::string>();
  auto run_dir = std::make_shared<std::string>();
  g->add_option("--problems", *problems, "a KernelBench dataset root (level1/..., level2/...)")->required();
  g->add_option("--run", *run_dir, "the run folder to fill (created if missing; a re-run fills what is missing)")
      ->required();
  g->add_option("--model", o->model, "the model's name at the endpoint")->required();
  g->add_option("--samples", o->samples, "samples per problem")->capture_default_str()->check(kbv::cli::kPositive);
  g->add_option("--level", o->level, "only this level");
  auto only = std::make_shared<std::string>();
  g->add_option("--only", *only, "only these problems: ids, ranges, parts of names (19,23-25,ReLU)");
  g->add_option("--endpoint", o->endpoint, "base URL of an OpenAI-compatible API (…/v1) or its /chat/completions")
      ->capture_default_str();
  g->add_option("--api-key-env", o->api_key_env, "environment variable holding the API key (never stored)")
      ->capture_default_str();
  g->add_option("--temperature", o->temperature, "sampling temperature (default: not sent, the endpoint's)");
  g->add_option("--max-tokens", o->max_tokens, "max_tokens of each request (default: not sent)")
      ->check(kbv::cli::kPositive);
  g->add_option("--reasoning-effort", o->reasoning_effort,
                "sent as reasoning_effort (e.g. low, medium, high) to endpoints that take it");
  g->add_option("--extra-body", *extra_body, "a JSON object merged into each request body, e.g. '{\"top_p\": 0.95}'");
  g->add_option("--concurrency", o->concurrency, "requests in flight at once")
      ->capture_default_str()
      ->check(kbv::cli::kPositive);
  g->add_option("--request-timeout", o->http.request_timeout_s, "seconds for one request")
      ->capture_default_str()
      ->check(kbv::cli::kPositive);
  g->add_option("--retries", o->http.retries, "retries of a request after 429, 5xx or a transport error")
      ->capture_default_str()
      ->check(kbv::cli::kNonNegative);
  g->add_option("--backoff", o->http.backoff_s, "seconds before the first retry; doubled each time (max 60)")
      ->capture_default_str()
      ->check(kbv::cli::kNonNegative);
  g->add_option("--prompt", o->prompt.variant, "prompt variant")
      ->capture_default_str()
      ->check(CLI::IsMember({"zero_shot", "one_shot", "few_shot"}));
  g->add_option("--precision", o->prompt.precision, "precision note in the prompt")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  g->add_option("--device", o->prompt.device,
                "the kernels to ask for: cuda (load_inline CUDA) or cpu (load_inline C++ only; templates of prompts/cpu/)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cuda", "cpu"}));
  g->add_option("--hardware", o->prompt.hardware, "add a hardware block for this GPU (a key of hardware.json: H200, ...)");
  g->add_flag("--input-blind", o->prompt.input_blind_all,
              "send every problem without get_inputs and size constants (else only those with KBV_INPUT_BLIND = True)");
  g->add_option("--prompts", *prompts_dir, "template folder (default: the source tree's prompts/)");
  g->add_option("--price-input", o->price_input, "USD per million prompt tokens, for the cost shown and recorded")
      ->check(kbv::cli::kNonNegative);
  g->add_option("--price-output", o->price_output, "USD per million completion tokens")->check(kbv::cli::kNonNegative);
  g->add_flag("--dry-run", o->dry_run, "print the plan and the first prompt; send nothing, write nothing");
  cmd->run = [o, prompts_dir, extra_body, problems, run_dir, only]() {
    if (!only->empty()) {
      std::string e;
      std::optional<ProblemSelection> sel = parse_selection(*only, e);
      if (!sel) {
        std::fprintf(stderr, "kbv generate: %s\n", e.c_str());
        return kExitUsage;
      }
      o->only = *sel;
      o->only_spec = *only;
    }
    o->problems_dir = *problems;
    o->run_dir = *run_dir;
    if (!prompts_dir->empty()) o->prompt.dir = *prompts_dir;
    if (o->price_input.has_value() != o->price_output.has_value()) {
      std::fprintf(stderr, "kbv generate: give both --price-input and --price-output, or neither\n");
      return 2;
    }
    if (!extra_body->empty()) {
      o->extra_body = nlohmann::json::parse(*extra_body, nullptr, false);
      if (!o->extra_body.is_object()) {
        std::fprintf(stderr, "kbv generate: --extra-body must be a JSON object, e.g. '{\"top_p\": 0.95}'; got %s\n",
                     extra_body->c_str());
        return 2;
      }
    }
    return finish("kbv generate", generate_run(*o, printer("kbv generate")));
  };
  return cmd;
}

#else

std::unique_ptr<GenerateCommand> add_generate_command(CLI::App& app) {
  auto cmd = std::make_unique<GenerateCommand>();
  cmd->app = app.add_subcommand("generate", "(not in this build: needs libcurl)");
  cmd->app->allow_extras();
  cmd->run = []() {
    std::fprintf(stderr,
                 "kbv generate: this kbv was built without libcurl; install libcurl4-openssl-dev and rebuild "
                 "(scripts/setup.sh)\n");
    return 2;
  };
  return cmd;
}

#endif

}  // namespace kbv::cli
