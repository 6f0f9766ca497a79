#include "supervisor/queue_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "formats/eval_results.h"
#include "queue/queue.h"
#include "record/trust.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

json record_environment(const Record& r) {
  const std::string device = r.metadata.device.value_or("");
  return json{{"torch_version", r.protocol.torch_version.value_or("")},
              {"python_version", r.protocol.python_version.value_or("")},
              {"device", device.rfind("cuda", 0) == 0 ? "cuda" : device},
              {"device_name", r.protocol.device_name.value_or("")}};
}

namespace {

struct Pending {
  SampleRef sample;
  fs::path problem_path;
  std::string solution_hash;
  std::string job_key;
  std::string id;
  size_t item = 0;
  bool started = false;
};

// RUN/kbv_queue_jobs.json: {"jobs": {job key: job id}}; missing or unreadable: none.
std::map<std::string, std::string> read_job_ids(const fs::path& file) {
  std::map<std::string, std::string> ids;
  FileText text = read_file(file);
  if (!text.ok) return ids;
  json j = json::parse(text.text, nullptr, false);
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_object()) return ids;
  for (const auto& [key, id] : j["jobs"].items())
    if (id.is_string()) ids[key] = id.get<std::string>();
  return ids;
}

}  // namespace

Outcome evaluate_run_through_queue(const QueueRunOptions& opt, const Notify& notify) {
  const RunOptions& ro = opt.run;
  Discovery dataset = discover_dataset(ro.problems_dir, ro.level);
  if (!dataset.error.empty()) return Outcome::fail(Status::input_error, dataset.error);
  RunDiscovery run = discover_run(ro.run_dir, ro.level);
  if (!run.error.empty()) return Outcome::fail(Status::input_error, run.error);
  for (const auto& w : dataset.warnings) warn(notify, w);
  for (const auto& w : run.warnings) warn(notify, w);

  std::map<std::pair<int, int>, const ProblemRef*> problems;
  std::set<std::pair<int, int>> left_out;  // problems --only does not take
  for (const auto& p : dataset.problems) {
    if (ro.only.takes(p))
      problems[{p.level, p.id}] = &p;
    else
      left_out.insert({p.level, p.id});
  }
  if (!ro.only.empty() && problems.empty())
    return Outcome::fail(Status::input_error, fmt::format("--only {}: no problem of {} matches", ro.only_spec,
                                                          ro.problems_dir.string()));

  std::string error;
  std::unique_ptr<Store> store = Store::open(ro.run_dir / "kbv.sqlite", error);
  if (!store) return Outcome::fail(Status::input_error, error);
  std::unique_ptr<queue::Queue> q = queue::Queue::open(opt.queue_url, error);
  if (!q) return Outcome::fail(Status::input_error, error);

  // The store's key holds the protocol hash over the protocol and the environment of the host
  // that evaluated (Environment::to_json). The queue's workers decide the environment, so the
  // hashes of this protocol are those of the environments the stored records name (of the device
  // asked for, if any): a sample stored under one of them, by kbv eval --run or through the
  // queue, is done.
  const std::string device = opt.job_options.value("device", std::string());
  std::set<std::string> hashes;
  for (const StoredRow& row : store->rows()) {
    json env = record_environment(row.record);
    if (!device.empty() && env["device"] != device) continue;
    if (std::string h = protocol_hash(ro.eval.protocol, env); h == row.key.protocol_hash) hashes.insert(h);
  }
  std::map<int, EvalResultsFile> level_files;
  for (const auto& h : hashes)
    for (const auto& r : store->latest(h)) level_files[r.level].put(r);

  const fs::path ids_file = ro.run_dir / kQueueJobsFile;
  std::map<std::string, std::string> known_ids = read_job_ids(ids_file);
  std::map<fs::path, FileText> problem_texts;
  std::vector<Pending> pending;
  std::set<int> levels;
  int skipped = 0, unknown_problem = 0, unreadable = 0, picked_up = 0;
  for (const auto& s : run.samples) {
    levels.insert(s.level);
    if (left_out.count({s.level, s.problem_id})) continue;
    if (interrupted()) break;
    PreparedCandidate candidate = read_candidate(s.path);
    bool stored = false;
    for (const auto& h : hashes) stored = stored || store->has({s.level, s.problem_id, s.sample_id, candidate.hash, h});
    if (stored) {
      ++skipped;
      continue;
    }
    auto it = problems.find({s.level, s.problem_id});
    if (it == problems.end()) {
      warn(notify, fmt::format("{}: no problem with id {} in level {} under {}; not submitted", s.path.string(),
                               s.problem_id, s.level, ro.problems_dir.string()));
      ++unknown_problem;
      continue;
    }
    auto [text, fresh] = problem_texts.try_emplace(it->second->path);
    if (fresh) text->second = read_file(it->second->path);
    FileText solution = read_file(s.path);
    if (!text->second.ok || !solution.ok) {
      warn(notify, (text->second.ok ? solution.error : text->second.error) + "; not submitted");
      ++unreadable;
      continue;
    }
    queue::JobSpec spec;
    // "level1/19_ReLU", as kbv eval --problem --queue names it (the record's identity is set
    // from the sample below, whatever the name gives).
    spec.problem_name = fmt::format("level{}/{}", s.level, it->second->path.stem().string());
    spec.problem_source = text->second.text;
    spec.solution_source = solution.text;
    spec.options = opt.job_options;
    spec.sample_id = s.sample_id;  // the record's, and kbv report --queue's
    Pending p;
    p.sample = s;
    p.problem_path = it->second->path;
    p.solution_hash = candidate.hash;
    p.job_key = spec.key();
    // A job this run folder submitted before (a run stopped while its jobs were queued): its id,
    // unless the queue no longer has it or it failed.
    if (auto known = known_ids.find(p.job_key); known != known_ids.end()) {
      std::optional<queue::Job> job = q->get(known->second, error);
      if (job && job->state != queue::State::failed) {
        p.id = known->second;
        ++picked_up;
      }
    }
    if (p.id.empty()) {
      std::optional<std::string> id = q->submit(spec, error);
      if (!id) return Outcome::fail(Status::input_error, fmt::format("{}; {} job(s) submitted so far", error, pending.size()));
      p.id = *id;
    }
    known_ids[p.job_key] = p.id;
    p.item = pending.size();
    pending.push_back(std::move(p));
  }
  // Written before waiting, so Ctrl-C leaves a file that names every job in the queue.
  {
    json ids = json::object();
    for (const auto& [key, id] : known_ids) ids[key] = id;
    if (std::string e = write_file_atomic(ids_file, json{{"queue", queue::redact_url(q->url())}, {"jobs", ids}}.dump(1));
        !e.empty())
      warn(notify, e + " (a run stopped now submits its samples again)");
  }
  const size_t total = pending.size();
  info(notify, fmt::format("{} sample(s) submitted to {}{}, {} already stored for this protocol", total,
                           queue::redact_url(q->url()),
                           picked_up ? fmt::format(" ({} picked up from an earlier run)", picked_up) : "", skipped));
  auto write_level = [&](int level) {
    if (std::string e = write_file_atomic(ro.run_dir / eval_results_name(level, levels.size() > 1, ro.eval.protocol.precision),
                                          level_files[level].json().dump(2));
        !e.empty())
      warn(notify, e);
  };
  if (total == 0 && skipped == 0) {
    return Outcome::fail(Status::input_error,
                         fmt::format("nothing to evaluate in {}: {}", ro.run_dir.string(),
                                     unknown_problem + unreadable > 0
                                         ? fmt::format("{} sample(s) name a problem {} lacks, {} cannot be read",
                                                       unknown_problem, ro.problems_dir.string(), unreadable)
                                         : "--only " + ro.only_spec + " takes none of its samples"));
  }

  begin_items(notify, total);
  size_t done = 0, correct = 0, failed = 0;
  std::string last_counts;
  double backoff = opt.poll_seconds;
  std::vector<std::string> failures;
  std::string store_error;
  while (!pending.empty() && !interrupted() && store_error.empty()) {
    size_t queued = 0, running = 0;
    bool db_error = false;
    for (size_t i = 0; i < pending.size() && !interrupted();) {
      Pending& p = pending[i];
      std::optional<queue::Job> job = q->get(p.id, error);
      if (!job) {
        if (!error.empty()) {
          db_error = true;
          ++i;
          continue;
        }
        job = queue::Job{};
        job->state = queue::State::failed;
        job->error = fmt::format("job {} is no longer in {}", p.id, queue::redact_url(q->url()));
      }
      const std::string what = fmt::format("level {} problem {} sample {}", p.sample.level, p.sample.problem_id,
                                           p.sample.sample_id);
      if (job->state == queue::State::queued) {
        ++queued;
        ++i;
        continue;
      }
      if (job->state == queue::State::running) {
        if (!p.started) item_started(notify, p.item, what + " on " + job->worker);
        p.started = true;
        ++running;
        ++i;
        continue;
      }
      if (job->state == queue::State::failed) {
        ++failed;
        failures.push_back(fmt::format("{}: job {} failed: {}", what, p.id, first_line(job->error)));
        item_done(notify, p.item, false, fmt::format("{}: job {} failed - {}", what, p.id, first_line(job->error)));
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      RecordRead read = record_from_json(job->record);
      if (!read.ok()) {
        ++failed;
        failures.push_back(fmt::format("{}: job {}: its record does not read: {}", what, p.id, read.error));
        item_done(notify, p.item, false, failures.back());
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      // The record names this run's sample, as kbv eval --run's own does; the rest is the worker's.
      Record r = std::move(read.record);
      r.level = p.sample.level;
      r.problem_id = p.sample.problem_id;
      r.sample_id = p.sample.sample_id;
      r.problem = p.problem_path.string();
      r.solution = p.sample.path.string();
      const RecordKey key{r.level, r.problem_id, r.sample_id, p.solution_hash,
                          protocol_hash(ro.eval.protocol, record_environment(r))};
      if (std::string e = store->put(key, r); !e.empty()) {
        store_error = e;
        break;
      }
      level_files[r.level].put(r);
      write_level(r.level);
      ++done;
      const bool ok = r.is_correct();
      if (ok) ++correct;
      item_done(notify, p.item, ok,
                fmt::format("[{}/{}] {}: {} ({:.1f} s, {}){}{}{}", done + failed, total, what, verdict_name(r.verdict),
                            r.seconds.value_or(0.0), job->worker, ok ? "" : " - ",
                            ok ? "" : first_line(r.message), sample_line_suffix(r)));
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const std::string counts =
        fmt::format("{} queued, {} running, {} done, {} failed of {}", queued, running, done, failed, total);
    if (counts != last_counts && !pending.empty()) progress(notify, "queue: " + counts);
    last_counts = counts;
    if (db_error) {
      warn(notify, fmt::format("{}; trying again in {:.1f} s", error, backoff));
      backoff = std::min(backoff * 2, 10.0);
    } else {
      backoff = opt.poll_seconds;
    }
    if (!pending.empty() && !interrupted() && store_error.empty())
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
  end_items(notify);
  for (int level : levels) write_level(level);
  if (!store_error.empty())
    return Outcome::fail(Status::input_error,
                         fmt::format("{}; stopped: {} of {} stored ({} correct); the other jobs stay in the queue, "
                                     "run again to pick up their results",
                                     store_error, done, total, correct));
  if (interrupted())
    return Outcome::fail(Status::interrupted,
                         fmt::format("interrupted: {} of {} stored ({} correct); {} job(s) stay in the queue, run "
                                     "again to pick up their results",
                                     done, total, correct, pending.size()));
  for (const auto& f : failures) warn(notify, f);
  if (failed > 0)
    return Outcome::fail(Status::incomplete,
                         fmt::format("{} of {} stored ({} correct); {} job(s) failed without a record (above), run "
                                     "again to submit them again",
                                     done, total, correct, failed));
  info(notify, fmt::format("{} evaluated, {} correct; results in {}", done, correct,
                           (ro.run_dir / eval_results_name(0, false, ro.eval.protocol.precision)).string()));
  return Outcome::done();
}

}  // namespace kbv
