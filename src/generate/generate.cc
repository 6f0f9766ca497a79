#include "generate/generate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "problem/problem.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/interrupt.h"

namespace kbv {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ProblemPrompt {
  const ProblemRef* problem = nullptr;
  std::string source_hash;
  Prompt prompt;
  std::string prompt_file;  // relative to the run folder
};

struct Task {
  const ProblemPrompt* problem = nullptr;
  int sample = 0;
};

// 1234 -> "1,234"; 123456 -> "123k"; for progress lines.
std::string tokens_text(long long n) {
  if (n >= 10'000'000) return fmt::format("{:.1f}M", n / 1e6);
  if (n >= 100'000) return fmt::format("{}k", n / 1000);
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

long long usage_count(const json& usage, const char* openai_name, const char* other_name) {
  if (!usage.is_object()) return -1;
  for (const char* name : {openai_name, other_name})
    if (usage.contains(name) && usage[name].is_number_integer()) return usage[name].get<long long>();
  return -1;
}

bool kernel_file_exists(const fs::path& run_dir, const std::string& stem) {
  std::error_code ec;
  for (const char* ext : {".py", ".md", ".txt"})
    if (fs::exists(run_dir / (stem + "_kernel" + ext), ec)) return true;
  return false;
}

// The sidecar of a sample, or an empty object when it is missing or unreadable.
json read_sidecar(const fs::path& path) {
  FileText t = read_file(path);
  json j = t.ok ? json::parse(t.text, nullptr, false) : json();
  return j.is_object() ? j : json::object();
}

// Totals shown on the progress line and at the end.
struct Tally {
  size_t done = 0, total = 0, ok = 0, no_code = 0, failed = 0;
  long long prompt_tokens = 0, completion_tokens = 0;
  double cost = 0;
  bool cost_known = false;

  std::string so_far() const {
    std::string s = fmt::format("{} prompt + {} completion tokens", tokens_text(prompt_tokens),
                                tokens_text(completion_tokens));
    if (cost_known) s += fmt::format(", ${:.2f}", cost);
    return s;
  }
};

}  // namespace

namespace {
// Done, or done with some samples left for a re-run (the lines before said which and why).
Outcome some_failed(size_t failed) { return failed ? Outcome::fail(Status::incomplete, "") : Outcome::done(); }
}  // namespace

std::string sample_stem(int level, int problem_id, int sample_id) {
  return fmt::format("level_{}_problem_{}_sample_{}", level, problem_id, sample_id);
}

Outcome generate_run(const GenerateOptions& o, const Notify& notify) {
  if (o.samples < 1 || o.concurrency < 1) {
    return Outcome::fail(Status::input_error, "--samples and --concurrency must be at least 1");
  }
  if (o.model.empty()) {
    return Outcome::fail(Status::input_error, "--model is required (the name the endpoint knows the model by)");
  }
  std::string error;
  EndpointOptions http = o.http;
  http.url = chat_completions_url(o.endpoint, error);
  if (http.url.empty()) return Outcome::fail(Status::input_error, error);
  const std::string host = url_host(http.url);
  Discovery dataset = discover_dataset(o.problems_dir, o.level);
  if (!dataset.error.empty()) return Outcome::fail(Status::input_error, dataset.error);
  if (std::string e = select_problems(dataset, o.only, o.only_spec); !e.empty())
    return Outcome::fail(Status::input_error, e);
  for (const auto& w : dataset.warnings) warn(notify, w);
  std::optional<PromptTemplates> templates = load_prompt_templates(o.prompt, error);
  if (!templates) return Outcome::fail(Status::input_error, error);
  if (!o.dry_run) {
    std::error_code ec;
    fs::create_directories(o.run_dir / "prompts", ec);
    if (ec)
      return Outcome::fail(Status::input_error,
                           fmt::format("cannot create {}: {}", (o.run_dir / "prompts").string(), ec.message()));
  }

  // Prompts, and the samples still missing.
  std::vector<std::unique_ptr<ProblemPrompt>> prompts;
  std::vector<Task> tasks;
  size_t already = 0, bad_problems = 0;
  std::map<std::string, size_t> other_models;  // model -> samples of it already in the run
  for (const ProblemRef& p : dataset.problems) {
    std::vector<int> missing;
    for (int s = 0; s < o.samples; ++s) {
      std::string stem = sample_stem(p.level, p.id, s);
      json sidecar = read_sidecar(o.run_dir / (stem + "_response.json"));
      bool no_code = sidecar.value("status", "") == "no_code_block";
      bool done = no_code || kernel_file_exists(o.run_dir, stem);
      if (!done) {
        missing.push_back(s);
        continue;
      }
      ++already;
      std::string model = sidecar.value("model", "");
      if (!model.empty() && model != o.model) ++other_models[model];
    }
    if (missing.empty()) continue;
    auto pp = std::make_unique<ProblemPrompt>();
    pp->problem = &p;
    FileText source = read_file(p.path);
    std::optional<Prompt> prompt;
    if (source.ok) prompt = render_prompt(*templates, source.text, error);
    if (!source.ok || !prompt) {
      info(notify, fmt::format("level {} problem {}: {}; its {} sample(s) are not generated", p.level, p.id,
                               source.ok ? error : source.error, missing.size()));
      ++bad_problems;
      continue;
    }
    pp->source_hash = sha256_hex(source.text);
    pp->prompt = std::move(*prompt);
    pp->prompt_file = fmt::format("prompts/level_{}_problem_{}_{}.md", p.level, p.id, pp->prompt.hash.substr(0, 12));
    if (!o.dry_run && !fs::exists(o.run_dir / pp->prompt_file)) {
      std::string e = write_file_atomic(o.run_dir / pp->prompt_file, pp->prompt.text);
      if (!e.empty()) return Outcome::fail(Status::input_error, e);
    }
    for (int s : missing) tasks.push_back(Task{pp.get(), s});
    prompts.push_back(std::move(pp));
  }
  for (const auto& [model, n] : other_models)
    warn(notify, fmt::format("{} already holds {} sample(s) from model {}; new ones come from {}", o.run_dir.string(), n,
                             model, o.model));

  std::string api_key;
  if (const char* k = std::getenv(o.api_key_env.c_str()); k && *k) api_key = k;
  info(notify, fmt::format("{} sample(s) to generate with {} at {} ({} {} prompt, {}{}{}), {} already in {}",
                           tasks.size(), o.model, host, o.prompt.device == "cpu" ? "CPU" : "CUDA", o.prompt.variant,
                           o.prompt.precision,
                           o.prompt.hardware.empty() ? "" : ", hardware ", o.prompt.hardware, already,
                           o.run_dir.string()));
  if (api_key.empty() && !tasks.empty())
    info(notify, fmt::format("no API key: ${} is not set, so requests carry no Authorization header", o.api_key_env));
  if (o.dry_run) {
    if (!prompts.empty()) {
      info(notify, fmt::format("dry run; the prompt for level {} problem {} follows, nothing was sent",
                               prompts.front()->problem->level, prompts.front()->problem->id));
      data(notify, prompts.front()->prompt.text);
    }
    return some_failed(bad_problems);
  }
  if (tasks.empty()) return some_failed(bad_problems);

  if (std::string e = init_http(); !e.empty()) return Outcome::fail(Status::internal, e);
  http.api_key = api_key;

  std::mutex mu;  // tally and notices
  Tally tally;
  tally.total = tasks.size();
  std::atomic<size_t> next{0};
  std::string write_error;
  // A non-retryable failure that repeats (a model the endpoint does not know, a bad key) would
  // repeat for every request left: after kSameFailureStop in a row, nothing more is sent.
  constexpr int kSameFailureStop = 3;
  std::string last_failure;
  int same_failures = 0;
  std::atomic<bool> stop{false};
  std::string stop_reason;
  // What is in flight, for the heartbeat line while nothing else is said.
  std::atomic<int> in_flight{0}, retrying{0};
  auto last_line = std::chrono::steady_clock::now();
  auto say = [&](std::string line) {  // with mu held
    last_line = std::chrono::steady_clock::now();
    progress(notify, std::move(line));
  };
  auto worker = [&]() {
    for (;;) {
      size_t i = next++;
      if (i >= tasks.size() || interrupted() || stop) return;
      const Task& task = tasks[i];
      const ProblemRef& p = *task.problem->problem;
      const std::string stem = sample_stem(p.level, p.id, task.sample);

      json messages = json::array();
      if (auto sys = templates->files.find(templates->names.count("system.md") ? templates->names.at("system.md") : "system.md");
          sys != templates->files.end() && !sys->second.empty())
        messages.push_back({{"role", "system"}, {"content", sys->second}});
      messages.push_back({{"role", "user"}, {"content", task.problem->prompt.text}});
      json body = {{"model", o.model}, {"messages", messages}};
      if (o.temperature) body["temperature"] = *o.temperature;
      if (o.max_tokens) body["max_tokens"] = *o.max_tokens;
      if (!o.reasoning_effort.empty()) body["reasoning_effort"] = o.reasoning_effort;
      body.update(o.extra_body);

      EndpointOptions mine = http;
      bool retried = false;
      mine.on_retry = [&](int attempt, const std::string& failure, double wait_s) {
        if (!retried) ++retrying;
        retried = true;
        std::lock_guard<std::mutex> lock(mu);
        say(fmt::format("level {} problem {} sample {}: attempt {} failed ({}); retrying in {:.1f} s", p.level, p.id,
                        task.sample, attempt, failure, wait_s));
      };
      ++in_flight;
      ChatResult r = chat_completion(mine, body);
      --in_flight;
      if (retried) --retrying;
      if (r.interrupted) return;

      json side = {{"kbv_version", KBV_VERSION},
                   {"status", ""},
                   {"level", p.level},
                   {"problem_id", p.id},
                   {"sample_id", task.sample},
                   {"problem", p.path.string()},
                   {"problem_hash", task.problem->source_hash},
                   {"model", o.model},
                   {"endpoint_host", host},
                   {"prompt",
                    {{"variant", o.prompt.variant},
                     {"device", o.prompt.device},
                     {"precision", o.prompt.precision},
                     {"hardware", o.prompt.hardware},
                     {"input_blind", task.problem->prompt.input_blind},
                     {"template_hash", templates->hash},
                     {"prompt_hash", task.problem->prompt.hash},
                     {"file", task.problem->prompt_file}}},
                   {"request", json::object()},
                   {"attempts", r.attempts},
                   {"attempt_errors", r.attempt_errors},
                   {"latency_s", r.latency_s},
                   {"total_s", r.total_s},
                   {"generated_at", utc_now()}};
      for (const char* key : {"temperature", "max_tokens", "reasoning_effort"})
        if (body.contains(key)) side["request"][key] = body[key];
      for (const auto& [key, value] : o.extra_body.items()) side["request"][key] = value;

      std::string outcome, e;
      long long in_tokens = -1, out_tokens = -1;
      std::optional<double> cost;
      if (!r.ok) {
        side["status"] = "request_failed";
        side["error"] = r.error;
        side["http_status"] = r.http_status;
        outcome = "request failed: " + r.error;
        e = write_file_atomic(o.run_dir / (stem + "_response.json"), side.dump(2) + "\n");
      } else {
        std::string answer = r.reasoning.empty() ? r.content : "<think>\n" + r.reasoning + "\n</think>\n\n" + r.content;
        Extraction x = extract_code(answer);
        bool has_code = x.found && !x.code.empty();
        in_tokens = usage_count(r.usage, "prompt_tokens", "input_tokens");
        out_tokens = usage_count(r.usage, "completion_tokens", "output_tokens");
        cost = r.cost_usd;
        std::string cost_source = cost ? "endpoint" : "";
        if (!cost && o.price_input && o.price_output && in_tokens >= 0 && out_tokens >= 0) {
          cost = (in_tokens * *o.price_input + out_tokens * *o.price_output) / 1e6;
          cost_source = "--price-input/--price-output";
        }
        side["status"] = has_code ? "ok" : "no_code_block";
        side["finish_reason"] = r.finish_reason;
        side["usage"] = r.usage;
        side["prompt_tokens"] = in_tokens >= 0 ? json(in_tokens) : json();
        side["completion_tokens"] = out_tokens >= 0 ? json(out_tokens) : json();
        side["cost_usd"] = cost ? json(*cost) : json();
        side["cost_source"] = cost_source;
        side["response_id"] = r.response.value("id", "");
        side["response_model"] = r.response.value("model", "");
        side["reasoning_separate"] = !r.reasoning.empty();
        side["extraction"] = {{"block_index", x.block_index},
                              {"block_count", x.block_count},
                              {"language_tag", x.language_tag},
                              {"first_line", x.first_line},
                              {"skipped_in_reasoning", x.skipped_in_reasoning}};
        side["files"] = {{"response", stem + "_response.md"}};
        if (has_code) {
          side["files"]["kernel"] = stem + "_kernel.py";
          outcome = fmt::format("ok, code from block {} of {}", x.block_index + 1, x.block_count);
        } else {
          side["error"] = x.found ? "the first code block is empty" : "no fenced code block in the answer";
          if (x.skipped_in_reasoning > 0)
            side["error"] = side["error"].get<std::string>() +
                            fmt::format(" ({} inside the reasoning section, not used)", x.skipped_in_reasoning);
          outcome = side["error"].get<std::string>();
          if (r.finish_reason == "length") outcome += " (the answer hit the token limit)";
        }
        outcome += fmt::format(", {:.1f} s", r.latency_s);
        if (r.attempts > 1) outcome += fmt::format(", {} attempts", r.attempts);
        // The raw answer first, then the sidecar, then the code: the kernel file (or a
        // no_code_block sidecar) marks the sample done, so a kill never leaves a sample that
        // looks done without its answer.
        e = write_file_atomic(o.run_dir / (stem + "_response.md"), answer);
        if (e.empty()) e = write_file_atomic(o.run_dir / (stem + "_response.json"), side.dump(2) + "\n");
        if (e.empty() && has_code) e = write_file_atomic(o.run_dir / (stem + "_kernel.py"), x.code);
      }

      std::lock_guard<std::mutex> lock(mu);
      ++tally.done;
      if (!r.ok && !r.retryable) {
        std::string failure = fmt::format("{}|{}", r.http_status, r.error);
        same_failures = failure == last_failure ? same_failures + 1 : 1;
        last_failure = failure;
        if (same_failures >= kSameFailureStop && !stop) {
          stop = true;
          stop_reason = fmt::format("the endpoint gave the same answer to {} requests in a row ({}); nothing more "
                                    "was sent: fix the model name, key or endpoint and run again",
                                    same_failures, r.error);
        }
      } else if (r.ok) {
        same_failures = 0;
        last_failure.clear();
      }
      if (!e.empty()) {
        ++tally.failed;
        if (write_error.empty()) write_error = e;
        outcome = "not saved: " + e;
      } else if (!r.ok) {
        ++tally.failed;
      } else if (side["status"] == "ok") {
        ++tally.ok;
      } else {
        ++tally.no_code;
      }
      if (in_tokens > 0) tally.prompt_tokens += in_tokens;
      if (out_tokens > 0) tally.completion_tokens += out_tokens;
      if (cost) {
        tally.cost += *cost;
        tally.cost_known = true;
      }
      say(fmt::format("[{}/{}] level {} problem {} sample {}: {} | {}", tally.done, tally.total, p.level, p.id,
                      task.sample, outcome, tally.so_far()));
    }
  };
  std::vector<std::thread> threads;
  size_t n_threads = std::min<size_t>(static_cast<size_t>(o.concurrency), tasks.size());
  for (size_t t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  // A line every kQuiet seconds while requests are in flight and nothing else was said.
  constexpr auto kQuiet = std::chrono::seconds(10);
  std::atomic<bool> finished{false};
  std::thread heartbeat([&]() {
    auto start = std::chrono::steady_clock::now();
    while (!finished) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard<std::mutex> lock(mu);
      auto now = std::chrono::steady_clock::now();
      if (finished || in_flight == 0 || now - last_line < kQuiet) continue;
      say(fmt::format("... {} request(s) in flight ({} retrying), {}/{} done, {:.0f} s", in_flight.load(),
                      retrying.load(), tally.done, tally.total,
                      std::chrono::duration<double>(now - start).count()));
    }
  });
  for (auto& t : threads) t.join();
  finished = true;
  heartbeat.join();

  std::string summary = fmt::format("{} sample(s) written", tally.ok + tally.no_code);
  if (tally.no_code) summary += fmt::format(", {} of them without a code block (they count as failed)", tally.no_code);
  if (tally.failed) summary += fmt::format(", {} failed (run again to retry them)", tally.failed);
  summary += "; " + tally.so_far();
  if (interrupted())
    return Outcome::fail(Status::interrupted, fmt::format("interrupted: {}; {} not started or abandoned; run again to resume",
                                                          summary, tally.total - tally.done));
  info(notify, fmt::format("{}; in {}", summary, o.run_dir.string()));
  if (stop) return Outcome::fail(Status::incomplete, stop_reason + fmt::format(" ({} not sent)", tally.total - tally.done));
  if (!write_error.empty()) return Outcome::fail(Status::input_error, "cannot write the run folder: " + write_error);
  return some_failed(tally.failed + bad_problems);
}

}  // namespace kbv
