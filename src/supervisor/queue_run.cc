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

// The dataset and the run folder read; the problems --only takes, by (level, id), and those it
// leaves out.
struct Inputs {
  Discovery dataset;
  RunDiscovery run;
  std::map<std::pair<int, int>, const ProblemRef*> problems;
  std::set<std::pair<int, int>> left_out;
};

Outcome read_inputs(const RunOptions& ro, const Notify& notify, Inputs& in) {
  in.dataset = discover_dataset(ro.problems_dir, ro.level);
  if (!in.dataset.error.empty()) return Outcome::fail(Status::input_error, in.dataset.error);
  in.run = discover_run(ro.run_dir, ro.level);
  if (!in.run.error.empty()) return Outcome::fail(Status::input_error, in.run.error);
  for (const auto& w : in.dataset.warnings) warn(notify, w);
  for (const auto& w : in.run.warnings) warn(notify, w);
  for (const auto& p : in.dataset.problems) {
    if (ro.only.takes(p))
      in.problems[{p.level, p.id}] = &p;
    else
      in.left_out.insert({p.level, p.id});
  }
  if (!ro.only.empty() && in.problems.empty())
    return Outcome::fail(Status::input_error, fmt::format("--only {}: no problem of {} matches", ro.only_spec,
                                                          ro.problems_dir.string()));
  return Outcome::done();
}

// The store's key holds the protocol hash over the protocol and the environment of the host that
// evaluated (Environment::to_json). The queue's workers decide the environment, so the hashes of
// this protocol are those of the environments the stored records name (of the device asked for,
// if any): a sample stored under one of them, by kbv eval --run or through the queue, is done.
std::set<std::string> stored_protocol_hashes(const QueueRunOptions& opt, Store& store) {
  const std::string device = opt.job_options.value("device", std::string());
  std::set<std::string> hashes;
  for (const StoredRow& row : store.rows()) {
    json env = record_environment(row.record);
    if (!device.empty() && env["device"] != device) continue;
    if (std::string h = protocol_hash(opt.run.eval.protocol, env); h == row.key.protocol_hash) hashes.insert(h);
  }
  return hashes;
}

// The samples submitted (or picked up from an earlier run's jobs), and what was left out and why.
struct Submitted {
  std::vector<Pending> pending;
  std::set<int> levels;
  std::map<std::string, std::string> known_ids;  // job key -> job id, RUN/kbv_queue_jobs.json
  int skipped = 0, unknown_problem = 0, unreadable = 0, picked_up = 0;
};

// One sample's job: the one this run folder submitted before (a run stopped while its jobs were
// queued), unless the queue no longer has it or it failed; else a new one. Not ok: the queue
// refused the submission.
Outcome submit_sample(const QueueRunOptions& opt, queue::Queue& q, const SampleRef& s, const ProblemRef& problem,
                      const FileText& text, const FileText& solution, const std::string& hash, Submitted& out) {
  queue::JobSpec spec;
  // "level1/19_ReLU", as kbv eval --problem --queue names it (the record's identity is set from
  // the sample when its record is stored, whatever the name gives).
  spec.problem_name = fmt::format("level{}/{}", s.level, problem.path.stem().string());
  spec.problem_source = text.text;
  spec.solution_source = solution.text;
  spec.options = opt.job_options;
  spec.sample_id = s.sample_id;  // the record's, and kbv report --queue's
  Pending p;
  p.sample = s;
  p.problem_path = problem.path;
  p.solution_hash = hash;
  p.job_key = spec.key();
  std::string error;
  if (auto known = out.known_ids.find(p.job_key); known != out.known_ids.end()) {
    std::optional<queue::Job> job = q.get(known->second, error);
    if (job && job->state != queue::State::failed) {
      p.id = known->second;
      ++out.picked_up;
    }
  }
  if (p.id.empty()) {
    std::optional<std::string> id = q.submit(spec, error);
    if (!id) return Outcome::fail(Status::input_error, fmt::format("{}; {} job(s) submitted so far", error, out.pending.size()));
    p.id = *id;
  }
  out.known_ids[p.job_key] = p.id;
  p.item = out.pending.size();
  out.pending.push_back(std::move(p));
  return Outcome::done();
}

// Every sample of the run not stored under `hashes` submitted; those naming a problem the dataset
// lacks, or that cannot be read, said and left out.
Outcome submit_samples(const QueueRunOptions& opt, const Inputs& in, Store& store, queue::Queue& q,
                       const std::set<std::string>& hashes, const Notify& notify, Submitted& out) {
  std::map<fs::path, FileText> problem_texts;
  for (const auto& s : in.run.samples) {
    out.levels.insert(s.level);
    if (in.left_out.count({s.level, s.problem_id})) continue;
    if (interrupted()) break;
    PreparedCandidate candidate = read_candidate(s.path);
    bool stored = false;
    for (const auto& h : hashes) stored = stored || store.has({s.level, s.problem_id, s.sample_id, candidate.hash, h});
    if (stored) {
      ++out.skipped;
      continue;
    }
    auto it = in.problems.find({s.level, s.problem_id});
    if (it == in.problems.end()) {
      warn(notify, fmt::format("{}: no problem with id {} in level {} under {}; not submitted", s.path.string(),
                               s.problem_id, s.level, opt.run.problems_dir.string()));
      ++out.unknown_problem;
      continue;
    }
    auto [text, fresh] = problem_texts.try_emplace(it->second->path);
    if (fresh) text->second = read_file(it->second->path);
    FileText solution = read_file(s.path);
    if (!text->second.ok || !solution.ok) {
      warn(notify, (text->second.ok ? solution.error : text->second.error) + "; not submitted");
      ++out.unreadable;
      continue;
    }
    if (Outcome o = submit_sample(opt, q, s, *it->second, text->second, solution, candidate.hash, out); !o.ok()) return o;
  }
  return Outcome::done();
}

// Written before waiting, so Ctrl-C leaves a file that names every job in the queue.
void write_job_ids(const fs::path& ids_file, const queue::Queue& q, const Submitted& sub, const Notify& notify) {
  json ids = json::object();
  for (const auto& [key, id] : sub.known_ids) ids[key] = id;
  if (std::string e = write_file_atomic(ids_file, json{{"queue", queue::redact_url(q.url())}, {"jobs", ids}}.dump(1));
      !e.empty())
    warn(notify, e + " (a run stopped now submits its samples again)");
}

// The results gathered while waiting: the records stored, the jobs that failed without one.
struct Gathered {
  size_t total = 0, done = 0, correct = 0, failed = 0;
  std::vector<std::string> failures;
  std::string store_error;  // a record could not be stored: the wait stops
  std::map<int, EvalResultsFile> level_files;
};

// RUN/eval_results*.json of one level, from what is gathered; a failure to write it is said.
void write_level(const RunOptions& ro, const std::set<int>& levels, Gathered& g, int level, const Notify& notify) {
  if (std::string e = write_file_atomic(ro.run_dir / eval_results_name(level, levels.size() > 1, ro.eval.protocol.precision),
                                        g.level_files[level].json().dump(2));
      !e.empty())
    warn(notify, e);
}

// A finished job's record stored under this run's sample (as kbv eval --run's own: the sample's
// identity, the worker's everything else) and its level's file written. False: the store
// refused it (g.store_error).
bool store_record(const QueueRunOptions& opt, Store& store, const std::set<int>& levels, const Pending& p,
                  const queue::Job& job, Record r, const std::string& what, Gathered& g, const Notify& notify) {
  const RunOptions& ro = opt.run;
  r.level = p.sample.level;
  r.problem_id = p.sample.problem_id;
  r.sample_id = p.sample.sample_id;
  r.problem = p.problem_path.string();
  r.solution = p.sample.path.string();
  const RecordKey key{r.level, r.problem_id, r.sample_id, p.solution_hash,
                      protocol_hash(ro.eval.protocol, record_environment(r))};
  if (std::string e = store.put(key, r); !e.empty()) {
    g.store_error = e;
    return false;
  }
  g.level_files[r.level].put(r);
  write_level(ro, levels, g, r.level, notify);
  ++g.done;
  const bool ok = r.is_correct();
  if (ok) ++g.correct;
  item_done(notify, p.item, ok,
            fmt::format("[{}/{}] {}: {} ({:.1f} s, {}){}{}{}", g.done + g.failed, g.total, what, verdict_name(r.verdict),
                        r.seconds.value_or(0.0), job.worker, ok ? "" : " - ", ok ? "" : first_line(r.message),
                        sample_line_suffix(r)));
  return true;
}

// How one look at the jobs in flight went.
struct Look {
  size_t queued = 0, running = 0;
  std::string db_error;  // the queue could not be read (the last error)
};

// One look at every job in flight: those finished are stored (or counted as failed) and leave
// `pending`.
Look look_at_jobs(const QueueRunOptions& opt, Store& store, queue::Queue& q, const std::set<int>& levels,
                  std::vector<Pending>& pending, Gathered& g, const Notify& notify) {
  Look look;
  for (size_t i = 0; i < pending.size() && !interrupted();) {
    Pending& p = pending[i];
    std::string error;
    std::optional<queue::Job> job = q.get(p.id, error);
    if (!job) {
      if (!error.empty()) {
        look.db_error = error;
        ++i;
        continue;
      }
      job = queue::Job{};
      job->state = queue::State::failed;
      job->error = fmt::format("job {} is no longer in {}", p.id, queue::redact_url(q.url()));
    }
    const std::string what = fmt::format("level {} problem {} sample {}", p.sample.level, p.sample.problem_id,
                                         p.sample.sample_id);
    if (job->state == queue::State::queued) {
      ++look.queued;
      ++i;
      continue;
    }
    if (job->state == queue::State::running) {
      if (!p.started) item_started(notify, p.item, what + " on " + job->worker);
      p.started = true;
      ++look.running;
      ++i;
      continue;
    }
    if (job->state == queue::State::failed) {
      ++g.failed;
      g.failures.push_back(fmt::format("{}: job {} failed: {}", what, p.id, first_line(job->error)));
      item_done(notify, p.item, false, fmt::format("{}: job {} failed - {}", what, p.id, first_line(job->error)));
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    RecordRead read = record_from_json(job->record);
    if (!read.ok()) {
      ++g.failed;
      g.failures.push_back(fmt::format("{}: job {}: its record does not read: {}", what, p.id, read.error));
      item_done(notify, p.item, false, g.failures.back());
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (!store_record(opt, store, levels, p, *job, std::move(read.record), what, g, notify)) break;
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return look;
}

// Looks at the jobs every poll_seconds (backing off while the queue cannot be read) until none is
// in flight, Ctrl-C, or a record cannot be stored; the queue's counts said as they change.
void wait_for_jobs(const QueueRunOptions& opt, Store& store, queue::Queue& q, const std::set<int>& levels,
                   std::vector<Pending>& pending, Gathered& g, const Notify& notify) {
  std::string last_counts;
  double backoff = opt.poll_seconds;
  while (!pending.empty() && !interrupted() && g.store_error.empty()) {
    const Look look = look_at_jobs(opt, store, q, levels, pending, g, notify);
    const std::string counts = fmt::format("{} queued, {} running, {} done, {} failed of {}", look.queued,
                                           look.running, g.done, g.failed, g.total);
    if (counts != last_counts && !pending.empty()) progress(notify, "queue: " + counts);
    last_counts = counts;
    if (!look.db_error.empty()) {
      warn(notify, fmt::format("{}; trying again in {:.1f} s", look.db_error, backoff));
      backoff = std::min(backoff * 2, 10.0);
    } else {
      backoff = opt.poll_seconds;
    }
    if (!pending.empty() && !interrupted() && g.store_error.empty())
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
}

// The run's outcome once the wait is over.
Outcome queue_run_outcome(const RunOptions& ro, const Gathered& g, size_t still_pending, const Notify& notify) {
  if (!g.store_error.empty())
    return Outcome::fail(Status::input_error,
                         fmt::format("{}; stopped: {} of {} stored ({} correct); the other jobs stay in the queue, "
                                     "run again to pick up their results",
                                     g.store_error, g.done, g.total, g.correct));
  if (interrupted())
    return Outcome::fail(Status::interrupted,
                         fmt::format("interrupted: {} of {} stored ({} correct); {} job(s) stay in the queue, run "
                                     "again to pick up their results",
                                     g.done, g.total, g.correct, still_pending));
  for (const auto& f : g.failures) warn(notify, f);
  if (g.failed > 0)
    return Outcome::fail(Status::incomplete,
                         fmt::format("{} of {} stored ({} correct); {} job(s) failed without a record (above), run "
                                     "again to submit them again",
                                     g.done, g.total, g.correct, g.failed));
  info(notify, fmt::format("{} evaluated, {} correct; results in {}", g.done, g.correct,
                           (ro.run_dir / eval_results_name(0, false, ro.eval.protocol.precision)).string()));
  return Outcome::done();
}

}  // namespace

Outcome evaluate_run_through_queue(const QueueRunOptions& opt, const Notify& notify) {
  const RunOptions& ro = opt.run;
  Inputs in;
  if (Outcome read = read_inputs(ro, notify, in); !read.ok()) return read;
  std::string error;
  std::unique_ptr<Store> store = Store::open(ro.run_dir / "kbv.sqlite", error);
  if (!store) return Outcome::fail(Status::input_error, error);
  std::unique_ptr<queue::Queue> q = queue::Queue::open(opt.queue_url, error);
  if (!q) return Outcome::fail(Status::input_error, error);

  const std::set<std::string> hashes = stored_protocol_hashes(opt, *store);
  Gathered g;
  for (const auto& h : hashes)
    for (const auto& r : store->latest(h)) g.level_files[r.level].put(r);

  const fs::path ids_file = ro.run_dir / kQueueJobsFile;
  Submitted sub;
  sub.known_ids = read_job_ids(ids_file);
  if (Outcome submitted = submit_samples(opt, in, *store, *q, hashes, notify, sub); !submitted.ok()) return submitted;
  write_job_ids(ids_file, *q, sub, notify);
  g.total = sub.pending.size();
  info(notify, fmt::format("{} sample(s) submitted to {}{}, {} already stored for this protocol", g.total,
                           queue::redact_url(q->url()),
                           sub.picked_up ? fmt::format(" ({} picked up from an earlier run)", sub.picked_up) : "",
                           sub.skipped));
  if (g.total == 0 && sub.skipped == 0) {
    return Outcome::fail(Status::input_error,
                         fmt::format("nothing to evaluate in {}: {}", ro.run_dir.string(),
                                     sub.unknown_problem + sub.unreadable > 0
                                         ? fmt::format("{} sample(s) name a problem {} lacks, {} cannot be read",
                                                       sub.unknown_problem, ro.problems_dir.string(), sub.unreadable)
                                         : "--only " + ro.only_spec + " takes none of its samples"));
  }

  begin_items(notify, g.total);
  wait_for_jobs(opt, *store, *q, sub.levels, sub.pending, g, notify);
  end_items(notify);
  for (int level : sub.levels) write_level(ro, sub.levels, g, level, notify);
  return queue_run_outcome(ro, g, sub.pending.size(), notify);
}

}  // namespace kbv
