#include "service/api.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "problem/problem.h"
#include "util/fs.h"

namespace kbv::service {
using nlohmann::json;

Response error_response(int status, const std::string& message) {
  return {status, {{"error", {{"code", status}, {"message", message}}}}};
}

ProblemIndex index_problems(const std::vector<std::filesystem::path>& roots, std::string& error) {
  ProblemIndex index;
  for (const auto& root : roots) {
    Discovery d = discover_dataset(root);
    if (!d.error.empty()) {
      error = "--problems " + root.string() + ": " + d.error;
      return index;
    }
    index.roots.push_back(root.string());
    for (const auto& w : d.warnings) index.warnings.push_back(root.string() + ": " + w);
    for (const auto& p : d.problems) {
      std::string name = std::filesystem::relative(p.path, root).replace_extension().generic_string();
      index.by_name.emplace(name, p.path);  // the first root that has a name keeps it
    }
  }
  return index;
}

Api::Api(queue::Queue& queue, ProblemIndex problems, ApiConfig config, Metrics& metrics)
    : queue_(queue), problems_(std::move(problems)), config_(std::move(config)), metrics_(metrics) {}

namespace {

// A JSON body, or why it is not one: "malformed JSON at byte 17: ..." / "expected a JSON object".
std::variant<json, Response> parse_body(const std::string& body) {
  if (body.empty()) return error_response(400, "empty body: expected a JSON object (docs/SERVICE.md)");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    return error_response(400, fmt::format("malformed JSON at byte {}: {}", e.byte, e.what()));
  }
  if (!j.is_object()) return error_response(400, "expected a JSON object, got " + std::string(j.type_name()));
  return j;
}

std::string unknown_key(const json& object, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : object.items())
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) return key;
  return "";
}

// The source string at object[key], within `most` bytes; error text otherwise.
std::string source_of(const json& object, const char* key, const std::string& where, size_t most, std::string& out) {
  if (!object.contains(key)) return fmt::format("{}: missing (a string of Python source)", where);
  const json& v = object[key];
  if (!v.is_string()) return fmt::format("{}: expected a string, got {}", where, v.type_name());
  out = v.get<std::string>();
  if (out.empty()) return where + ": empty";
  if (out.size() > most)
    return fmt::format("{}: {} bytes, more than this server's limit of {} bytes", where, out.size(), most);
  return "";
}

}  // namespace

std::variant<queue::JobSpec, Response> Api::parse_request(const json& r, const std::string& where) {
  if (!r.is_object()) return error_response(400, where + ": expected an object, got " + r.type_name());
  if (std::string k = unknown_key(r, {"problem", "solution", "options"}); !k.empty())
    return error_response(400, fmt::format("{}{}: unknown field; the fields are problem, solution, options", where, k));
  queue::JobSpec spec;
  // problem: {"name"} | {"source"}
  if (!r.contains("problem")) return error_response(400, where + "problem: missing ({\"name\": ...} or {\"source\": ...})");
  const json& p = r["problem"];
  if (!p.is_object()) return error_response(400, where + "problem: expected an object, got " + p.type_name());
  if (std::string k = unknown_key(p, {"name", "source"}); !k.empty())
    return error_response(400, fmt::format("{}problem.{}: unknown field; give name or source", where, k));
  if (p.contains("name") == p.contains("source"))
    return error_response(400, where + "problem: give exactly one of name and source");
  if (p.contains("name")) {
    if (!p["name"].is_string()) return error_response(400, where + "problem.name: expected a string");
    std::string name = p["name"].get<std::string>();
    if (name.size() > 3 && name.ends_with(".py")) name.resize(name.size() - 3);
    auto it = problems_.by_name.find(name);
    if (it == problems_.by_name.end()) {
      std::string roots;
      for (const auto& root : problems_.roots) roots += (roots.empty() ? "" : ", ") + root;
      return error_response(422, fmt::format("{}problem.name: unknown problem '{}' (not in {}; names look like "
                                             "level1/19_ReLU)",
                                             where, p["name"].get<std::string>(),
                                             roots.empty() ? "any dataset: the server has no --problems" : roots));
    }
    FileText text = read_file(it->second);
    if (!text.ok) return error_response(500, "reading the problem " + it->second.string() + ": " + text.error);
    spec.problem_name = name;
    spec.problem_source = text.text;
  } else if (!config_.allow_problem_source) {
    return error_response(403, where + "problem.source: this server takes problems by name only (a problem's code "
                                       "runs unconfined on the server; its operator can allow sources with "
                                       "kbv serve --allow-problem-source)");
  } else if (std::string e = source_of(p, "source", where + "problem.source", config_.max_source_bytes,
                                       spec.problem_source);
             !e.empty()) {
    return error_response(400, e);
  }
  // solution: {"source"}
  if (!r.contains("solution")) return error_response(400, where + "solution: missing ({\"source\": ...})");
  const json& s = r["solution"];
  if (!s.is_object()) return error_response(400, where + "solution: expected an object, got " + s.type_name());
  if (std::string k = unknown_key(s, {"source"}); !k.empty())
    return error_response(400, fmt::format("{}solution.{}: unknown field; give source", where, k));
  if (std::string e = source_of(s, "source", where + "solution.source", config_.max_source_bytes, spec.solution_source);
      !e.empty())
    return error_response(400, e);
  CheckedOptions o = check_options(r.contains("options") ? r["options"] : json(), config_.limits);
  if (!o.ok()) return error_response(422, where + o.error);
  spec.options = std::move(o.canonical);
  return spec;
}

Response Api::submit(const std::string& body) {
  auto parsed = parse_body(body);
  if (auto* r = std::get_if<Response>(&parsed)) return *r;
  auto spec = parse_request(std::get<json>(parsed), "");
  if (auto* r = std::get_if<Response>(&spec)) return *r;
  std::string error;
  std::optional<std::string> id = queue_.submit(std::get<queue::JobSpec>(spec), error);
  if (!id) return error_response(503, "the queue did not take the job: " + error);
  // Already done (the same problem, solution and options): answered from the store.
  std::optional<queue::Job> job = queue_.get(*id, error);
  bool done = job && job->state == queue::State::done;
  metrics_.submitted(done);
  return {202, {{"id", *id}, {"status", job ? queue::state_name(job->state) : "queued"}}};
}

Response Api::submit_batch(const std::string& body) {
  auto parsed = parse_body(body);
  if (auto* r = std::get_if<Response>(&parsed)) return *r;
  const json& j = std::get<json>(parsed);
  if (std::string k = unknown_key(j, {"evaluations"}); !k.empty())
    return error_response(400, k + ": unknown field; a batch is {\"evaluations\": [...]}");
  if (!j.contains("evaluations") || !j["evaluations"].is_array())
    return error_response(400, "evaluations: missing or not a list ({\"evaluations\": [{problem, solution, options}, ...]})");
  const json& list = j["evaluations"];
  if (list.empty()) return error_response(400, "evaluations: empty");
  if (list.size() > config_.max_batch)
    return error_response(413, fmt::format("evaluations: {} items, more than this server's limit of {} per batch",
                                           list.size(), config_.max_batch));
  // Every item is checked before any is submitted: a bad item changes nothing.
  std::vector<queue::JobSpec> specs;
  for (size_t i = 0; i < list.size(); ++i) {
    auto spec = parse_request(list[i], fmt::format("evaluations[{}].", i));
    if (auto* r = std::get_if<Response>(&spec)) return *r;
    specs.push_back(std::move(std::get<queue::JobSpec>(spec)));
  }
  json ids = json::array();
  for (const auto& spec : specs) {
    std::string error;
    std::optional<std::string> id = queue_.submit(spec, error);
    if (!id) {
      return error_response(503, fmt::format("the queue did not take evaluations[{}]: {} (the {} before it were "
                                             "submitted: {})",
                                             ids.size(), error, ids.size(), ids.dump()));
    }
    metrics_.submitted(false);
    ids.push_back(*id);
  }
  return {202, {{"ids", ids}}};
}

Response Api::get(const std::string& id, const std::string& wait) {
  double wait_s = 0;
  if (!wait.empty()) {
    char* end = nullptr;
    wait_s = std::strtod(wait.c_str(), &end);
    if (end == wait.c_str() || *end != '\0' || !std::isfinite(wait_s) || wait_s < 0)
      return error_response(400, fmt::format("wait: expected seconds (a number at least 0), got '{}'", wait));
    wait_s = std::min(wait_s, config_.max_wait_s);
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait_s));
  for (;;) {
    unsigned long long seen;
    {
      std::lock_guard lock(mutex_);
      seen = generation_;
    }
    std::string error;
    std::optional<queue::Job> job = queue_.get(id, error);
    if (!job && !error.empty()) return error_response(503, "the queue could not be read: " + error);
    if (!job) return error_response(404, fmt::format("no evaluation with id '{}'", id));
    bool finished = job->state == queue::State::done || job->state == queue::State::failed;
    if (finished || std::chrono::steady_clock::now() >= deadline) {
      json body = {{"id", job->id}, {"status", queue::state_name(job->state)}, {"attempts", job->attempts}};
      if (job->state == queue::State::done) body["record"] = job->record;
      if (job->state == queue::State::failed) body["error"] = job->error;
      return {200, body};
    }
    // Woken by this process's workers at once; jobs finished elsewhere (kbv worker) are seen
    // within the poll interval.
    std::unique_lock lock(mutex_);
    finished_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(250)),
                         [&] { return generation_ != seen; });
  }
}

void Api::notify() {
  {
    std::lock_guard lock(mutex_);
    ++generation_;
  }
  finished_.notify_all();
}

Response Api::health() {
  std::string error;
  std::optional<queue::Counts> c = queue_.counts(error);
  if (!c) return error_response(503, "the queue does not answer: " + error);
  return {200, {{"status", "ok"}, {"queued", c->queued}, {"running", c->running}}};
}

std::string Api::metrics_text() {
  std::string error;
  return metrics_.render(queue_.counts(error), unix_now());
}

}  // namespace kbv::service
