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

namespace {

// What the run is asked against, checked before anything is planned: the endpoint, the dataset
// and the prompt templates.
struct Setup {
  EndpointOptions http;
  std::string host;
  Discovery dataset;
  PromptTemplates templates;
};

// The options, the endpoint's URL, the dataset and the templates checked; the run's prompts
// folder made (not on a dry run). Not ok: nothing was sent.
Outcome prepare(const GenerateOptions& o, const Notify& notify, Setup& s) {
  if (o.samples < 1 || o.concurrency < 1) {
    return Outcome::fail(Status::input_error, "--samples and --concurrency must be at least 1");
  }
  if (o.model.empty()) {
    return Outcome::fail(Status::input_error, "--model is required (the name the endpoint knows the model by)");
  }
  std::string error;
  s.http = o.http;
  s.http.url = chat_completions_url(o.endpoint, error);
  if (s.http.url.empty()) return Outcome::fail(Status::input_error, error);
  s.host = url_host(s.http.url);
  s.dataset = discover_dataset(o.problems_dir, o.level);
  if (!s.dataset.error.empty()) return Outcome::fail(Status::input_error, s.dataset.error);
  if (std::string e = select_problems(s.dataset, o.only, o.only_spec); !e.empty())
    return Outcome::fail(Status::input_error, e);
  for (const auto& w : s.dataset.warnings) warn(notify, w);
  std::optional<PromptTemplates> templates = load_prompt_templates(o.prompt, error);
  if (!templates) return Outcome::fail(Status::input_error, error);
  s.templates = std::move(*templates);
  if (!o.dry_run) {
    std::error_code ec;
    fs::create_directories(o.run_dir / "prompts", ec);
    if (ec)
      return Outcome::fail(Status::input_error,
                           fmt::format("cannot create {}: {}", (o.run_dir / "prompts").string(), ec.message()));
  }
  return Outcome::done();
}

// The samples still missing and their problems' prompts.
struct Plan {
  std::vector<std::unique_ptr<ProblemPrompt>> prompts;
  std::vector<Task> tasks;
  size_t already = 0, bad_problems = 0;
};

// The samples of `p` not in the run yet (no kernel file, no no_code_block sidecar); those that
// are counted in `already`, and in `other_models` when another model wrote them.
std::vector<int> missing_samples(const GenerateOptions& o, const ProblemRef& p, size_t& already,
                                 std::map<std::string, size_t>& other_models) {
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
  return missing;
}

// Each problem's prompt rendered (and written to the run folder once) for its missing samples; a
// problem that cannot be read or rendered is said and counted in `bad_problems`. Not ok: a prompt
// could not be written.
Outcome plan_samples(const GenerateOptions& o, const Setup& s, const Notify& notify, Plan& plan) {
  std::map<std::string, size_t> other_models;  // model -> samples of it already in the run
  for (const ProblemRef& p : s.dataset.problems) {
    std::vector<int> missing = missing_samples(o, p, plan.already, other_models);
    if (missing.empty()) continue;
    auto pp = std::make_unique<ProblemPrompt>();
    pp->problem = &p;
    FileText source = read_file(p.path);
    std::string error;
    std::optional<Prompt> prompt;
    if (source.ok) prompt = render_prompt(s.templates, source.text, error);
    if (!source.ok || !prompt) {
      info(notify, fmt::format("level {} problem {}: {}; its {} sample(s) are not generated", p.level, p.id,
                               source.ok ? error : source.error, missing.size()));
      ++plan.bad_problems;
      continue;
    }
    pp->source_hash = sha256_hex(source.text);
    pp->prompt = std::move(*prompt);
    pp->prompt_file = fmt::format("prompts/level_{}_problem_{}_{}.md", p.level, p.id, pp->prompt.hash.substr(0, 12));
    if (!o.dry_run && !fs::exists(o.run_dir / pp->prompt_file)) {
      std::string e = write_file_atomic(o.run_dir / pp->prompt_file, pp->prompt.text);
      if (!e.empty()) return Outcome::fail(Status::input_error, e);
    }
    for (int sample : missing) plan.tasks.push_back(Task{pp.get(), sample});
    plan.prompts.push_back(std::move(pp));
  }
  for (const auto& [model, n] : other_models)
    warn(notify, fmt::format("{} already holds {} sample(s) from model {}; new ones come from {}", o.run_dir.string(), n,
                             model, o.model));
  return Outcome::done();
}

// The plan said: what is sent where, and whether requests carry a key.
void announce(const GenerateOptions& o, const Setup& s, const Plan& plan, bool has_key, const Notify& notify) {
  info(notify, fmt::format("{} sample(s) to generate with {} at {} ({} {} prompt, {}{}{}), {} already in {}",
                           plan.tasks.size(), o.model, s.host, o.prompt.device == "cpu" ? "CPU" : "CUDA",
                           o.prompt.variant, o.prompt.precision,
                           o.prompt.hardware.empty() ? "" : ", hardware ", o.prompt.hardware, plan.already,
                           o.run_dir.string()));
  if (!has_key && !plan.tasks.empty())
    info(notify, fmt::format("no API key: ${} is not set, so requests carry no Authorization header", o.api_key_env));
}

// The chat request of one sample: the system template (when there is one) and the prompt.
json request_body(const GenerateOptions& o, const PromptTemplates& templates, const ProblemPrompt& problem) {
  json messages = json::array();
  if (auto sys = templates.files.find(templates.names.count("system.md") ? templates.names.at("system.md") : "system.md");
      sys != templates.files.end() && !sys->second.empty())
    messages.push_back({{"role", "system"}, {"content", sys->second}});
  messages.push_back({{"role", "user"}, {"content", problem.prompt.text}});
  json body = {{"model", o.model}, {"messages", messages}};
  if (o.temperature) body["temperature"] = *o.temperature;
  if (o.max_tokens) body["max_tokens"] = *o.max_tokens;
  if (!o.reasoning_effort.empty()) body["reasoning_effort"] = o.reasoning_effort;
  body.update(o.extra_body);
  return body;
}

// A sample's sidecar as far as the request goes (the answer's fields are added by save_answer).
json request_sidecar(const GenerateOptions& o, const Setup& s, const Task& task, const json& body, const ChatResult& r) {
  const ProblemRef& p = *task.problem->problem;
  json side = {{"kbv_version", KBV_VERSION},
               {"status", ""},
               {"level", p.level},
               {"problem_id", p.id},
               {"sample_id", task.sample},
               {"problem", p.path.string()},
               {"problem_hash", task.problem->source_hash},
               {"model", o.model},
               {"endpoint_host", s.host},
               {"prompt",
                {{"variant", o.prompt.variant},
                 {"device", o.prompt.device},
                 {"precision", o.prompt.precision},
                 {"hardware", o.prompt.hardware},
                 {"input_blind", task.problem->prompt.input_blind},
                 {"template_hash", s.templates.hash},
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
  return side;
}

// What one request left in the run folder, for the progress line and the tally.
struct Saved {
  std::string outcome;      // the progress line's words
  std::string write_error;  // "" when every file was written
  bool has_code = false;
  long long in_tokens = -1, out_tokens = -1;
  std::optional<double> cost;
};

// A failed request: its sidecar, saying why.
Saved save_failure(const GenerateOptions& o, const std::string& stem, json& side, const ChatResult& r) {
  Saved saved;
  side["status"] = "request_failed";
  side["error"] = r.error;
  side["http_status"] = r.http_status;
  saved.outcome = "request failed: " + r.error;
  saved.write_error = write_file_atomic(o.run_dir / (stem + "_response.json"), side.dump(2) + "\n");
  return saved;
}

// The answer's fields of the sidecar: usage and cost, the extracted block, the files.
void describe_answer(const GenerateOptions& o, const std::string& stem, json& side, const ChatResult& r,
                     const Extraction& x, Saved& saved) {
  saved.in_tokens = usage_count(r.usage, "prompt_tokens", "input_tokens");
  saved.out_tokens = usage_count(r.usage, "completion_tokens", "output_tokens");
  saved.cost = r.cost_usd;
  std::string cost_source = saved.cost ? "endpoint" : "";
  if (!saved.cost && o.price_input && o.price_output && saved.in_tokens >= 0 && saved.out_tokens >= 0) {
    saved.cost = (saved.in_tokens * *o.price_input + saved.out_tokens * *o.price_output) / 1e6;
    cost_source = "--price-input/--price-output";
  }
  side["status"] = saved.has_code ? "ok" : "no_code_block";
  side["finish_reason"] = r.finish_reason;
  side["usage"] = r.usage;
  side["prompt_tokens"] = saved.in_tokens >= 0 ? json(saved.in_tokens) : json();
  side["completion_tokens"] = saved.out_tokens >= 0 ? json(saved.out_tokens) : json();
  side["cost_usd"] = saved.cost ? json(*saved.cost) : json();
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
  if (saved.has_code) side["files"]["kernel"] = stem + "_kernel.py";
}

// An answer: its code extracted; the raw answer, the sidecar and the code written, in that order.
Saved save_answer(const GenerateOptions& o, const std::string& stem, json& side, const ChatResult& r) {
  Saved saved;
  std::string answer = r.reasoning.empty() ? r.content : "<think>\n" + r.reasoning + "\n</think>\n\n" + r.content;
  Extraction x = extract_code(answer);
  saved.has_code = x.found && !x.code.empty();
  describe_answer(o, stem, side, r, x, saved);
  if (saved.has_code) {
    saved.outcome = fmt::format("ok, code from block {} of {}", x.block_index + 1, x.block_count);
  } else {
    side["error"] = x.found ? "the first code block is empty" : "no fenced code block in the answer";
    if (x.skipped_in_reasoning > 0)
      side["error"] = side["error"].get<std::string>() +
                      fmt::format(" ({} inside the reasoning section, not used)", x.skipped_in_reasoning);
    saved.outcome = side["error"].get<std::string>();
    if (r.finish_reason == "length") saved.outcome += " (the answer hit the token limit)";
  }
  saved.outcome += fmt::format(", {:.1f} s", r.latency_s);
  if (r.attempts > 1) saved.outcome += fmt::format(", {} attempts", r.attempts);
  // The raw answer first, then the sidecar, then the code: the kernel file (or a no_code_block
  // sidecar) marks the sample done, so a kill never leaves a sample that looks done without its
  // answer.
  std::string& e = saved.write_error;
  e = write_file_atomic(o.run_dir / (stem + "_response.md"), answer);
  if (e.empty()) e = write_file_atomic(o.run_dir / (stem + "_response.json"), side.dump(2) + "\n");
  if (e.empty() && saved.has_code) e = write_file_atomic(o.run_dir / (stem + "_kernel.py"), x.code);
  return saved;
}

// A non-retryable failure that repeats (a model the endpoint does not know, a bad key) would
// repeat for every request left: after kSameFailureStop in a row, nothing more is sent.
constexpr int kSameFailureStop = 3;

// What the request threads share: the tally, the first write error, the stop after repeated
// failures (under `mu`), and what is in flight (for the heartbeat line).
struct Progress {
  explicit Progress(const Notify& n) : notify(n) {}
  const Notify& notify;
  std::mutex mu;
  Tally tally;
  std::string write_error;
  std::string last_failure;
  int same_failures = 0;
  std::atomic<bool> stop{false};
  std::string stop_reason;
  std::atomic<int> in_flight{0}, retrying{0};
  std::chrono::steady_clock::time_point last_line = std::chrono::steady_clock::now();
  void say(std::string line) {  // with mu held
    last_line = std::chrono::steady_clock::now();
    progress(notify, std::move(line));
  }
};

// A finished request's repeated failure noted (with g.mu held): the run stops at kSameFailureStop.
void note_failure(Progress& g, const ChatResult& r) {
  if (!r.ok && !r.retryable) {
    std::string failure = fmt::format("{}|{}", r.http_status, r.error);
    g.same_failures = failure == g.last_failure ? g.same_failures + 1 : 1;
    g.last_failure = failure;
    if (g.same_failures >= kSameFailureStop && !g.stop) {
      g.stop = true;
      g.stop_reason = fmt::format("the endpoint gave the same answer to {} requests in a row ({}); nothing more "
                                  "was sent: fix the model name, key or endpoint and run again",
                                  g.same_failures, r.error);
    }
  } else if (r.ok) {
    g.same_failures = 0;
    g.last_failure.clear();
  }
}

// A finished request counted and said (with g.mu held).
void count_sample(Progress& g, const ChatResult& r, Saved& saved, const Task& task) {
  const ProblemRef& p = *task.problem->problem;
  ++g.tally.done;
  note_failure(g, r);
  if (!saved.write_error.empty()) {
    ++g.tally.failed;
    if (g.write_error.empty()) g.write_error = saved.write_error;
    saved.outcome = "not saved: " + saved.write_error;
  } else if (!r.ok) {
    ++g.tally.failed;
  } else if (saved.has_code) {
    ++g.tally.ok;
  } else {
    ++g.tally.no_code;
  }
  if (saved.in_tokens > 0) g.tally.prompt_tokens += saved.in_tokens;
  if (saved.out_tokens > 0) g.tally.completion_tokens += saved.out_tokens;
  if (saved.cost) {
    g.tally.cost += *saved.cost;
    g.tally.cost_known = true;
  }
  g.say(fmt::format("[{}/{}] level {} problem {} sample {}: {} | {}", g.tally.done, g.tally.total, p.level, p.id,
                    task.sample, saved.outcome, g.tally.so_far()));
}

// One sample requested, saved and counted. False when interrupted (nothing recorded).
bool generate_sample(const GenerateOptions& o, const Setup& s, const Task& task, Progress& g) {
  const ProblemRef& p = *task.problem->problem;
  const std::string stem = sample_stem(p.level, p.id, task.sample);
  const json body = request_body(o, s.templates, *task.problem);
  EndpointOptions mine = s.http;
  bool retried = false;
  mine.on_retry = [&](int attempt, const std::string& failure, double wait_s) {
    if (!retried) ++g.retrying;
    retried = true;
    std::lock_guard<std::mutex> lock(g.mu);
    g.say(fmt::format("level {} problem {} sample {}: attempt {} failed ({}); retrying in {:.1f} s", p.level, p.id,
                      task.sample, attempt, failure, wait_s));
  };
  ++g.in_flight;
  ChatResult r = chat_completion(mine, body);
  --g.in_flight;
  if (retried) --g.retrying;
  if (r.interrupted) return false;
  json side = request_sidecar(o, s, task, body, r);
  Saved saved = r.ok ? save_answer(o, stem, side, r) : save_failure(o, stem, side, r);
  std::lock_guard<std::mutex> lock(g.mu);
  count_sample(g, r, saved, task);
  return true;
}

// The tasks requested by o.concurrency threads, with a heartbeat line every kQuiet seconds while
// requests are in flight and nothing else was said; until every task is done, the run stops or is
// interrupted.
void run_requests(const GenerateOptions& o, const Setup& s, const std::vector<Task>& tasks, Progress& g) {
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (;;) {
      size_t i = next++;
      if (i >= tasks.size() || interrupted() || g.stop) return;
      if (!generate_sample(o, s, tasks[i], g)) return;
    }
  };
  std::vector<std::thread> threads;
  size_t n_threads = std::min<size_t>(static_cast<size_t>(o.concurrency), tasks.size());
  for (size_t t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  constexpr auto kQuiet = std::chrono::seconds(10);
  std::atomic<bool> finished{false};
  std::thread heartbeat([&]() {
    auto start = std::chrono::steady_clock::now();
    while (!finished) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard<std::mutex> lock(g.mu);
      auto now = std::chrono::steady_clock::now();
      if (finished || g.in_flight == 0 || now - g.last_line < kQuiet) continue;
      g.say(fmt::format("... {} request(s) in flight ({} retrying), {}/{} done, {:.0f} s", g.in_flight.load(),
                        g.retrying.load(), g.tally.done, g.tally.total,
                        std::chrono::duration<double>(now - start).count()));
    }
  });
  for (auto& t : threads) t.join();
  finished = true;
  heartbeat.join();
}

// The closing line, and the run's outcome.
Outcome finish(const GenerateOptions& o, const Progress& g, size_t bad_problems) {
  const Tally& tally = g.tally;
  std::string summary = fmt::format("{} sample(s) written", tally.ok + tally.no_code);
  if (tally.no_code) summary += fmt::format(", {} of them without a code block (they count as failed)", tally.no_code);
  if (tally.failed) summary += fmt::format(", {} failed (run again to retry them)", tally.failed);
  summary += "; " + tally.so_far();
  if (interrupted())
    return Outcome::fail(Status::interrupted, fmt::format("interrupted: {}; {} not started or abandoned; run again to resume",
                                                          summary, tally.total - tally.done));
  info(g.notify, fmt::format("{}; in {}", summary, o.run_dir.string()));
  if (g.stop)
    return Outcome::fail(Status::incomplete, g.stop_reason + fmt::format(" ({} not sent)", tally.total - tally.done));
  if (!g.write_error.empty()) return Outcome::fail(Status::input_error, "cannot write the run folder: " + g.write_error);
  return some_failed(tally.failed + bad_problems);
}

}  // namespace

Outcome generate_run(const GenerateOptions& o, const Notify& notify) {
  Setup s;
  if (Outcome checked = prepare(o, notify, s); !checked.ok()) return checked;
  Plan plan;  // prompts, and the samples still missing
  if (Outcome planned = plan_samples(o, s, notify, plan); !planned.ok()) return planned;
  std::string api_key;
  if (const char* k = std::getenv(o.api_key_env.c_str()); k && *k) api_key = k;
  announce(o, s, plan, !api_key.empty(), notify);
  if (o.dry_run) {
    if (!plan.prompts.empty()) {
      info(notify, fmt::format("dry run; the prompt for level {} problem {} follows, nothing was sent",
                               plan.prompts.front()->problem->level, plan.prompts.front()->problem->id));
      data(notify, plan.prompts.front()->prompt.text);
    }
    return some_failed(plan.bad_problems);
  }
  if (plan.tasks.empty()) return some_failed(plan.bad_problems);

  if (std::string e = init_http(); !e.empty()) return Outcome::fail(Status::internal, e);
  s.http.api_key = api_key;
  Progress g(notify);
  g.tally.total = plan.tasks.size();
  run_requests(o, s, plan.tasks, g);
  return finish(o, g, plan.bad_problems);
}

}  // namespace kbv
