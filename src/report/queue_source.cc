// `kbv report` over a job queue's database (docs/QUEUE.md, "Reports from the queue"): the done
// jobs' records, read as a run folder's kbv.sqlite is read.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "queue/queue.h"
#include "report/command.h"

namespace kbv {

bool is_queue_url(const std::string& text) {
  for (const char* scheme : {"sqlite:", "postgresql://", "postgres://"})
    if (text.rfind(scheme, 0) == 0) return true;
  return false;
}

std::string shown_input(const std::filesystem::path& input) {
  return is_queue_url(input.string()) ? queue::redact_url(input.string()) : input.string();
}

std::vector<LoadedRun> load_queue(const std::string& url, std::vector<std::string>& warnings, std::string& error) {
  std::unique_ptr<queue::Queue> q = queue::Queue::open(url, error);
  if (!q) return {};
  std::optional<std::vector<queue::Job>> jobs = q->done_jobs(error);
  if (!jobs) return {};
  const std::string shown = queue::redact_url(url);
  if (jobs->empty()) {
    error = shown + ": holds no done jobs (kbv eval --queue or kbv serve submit them, kbv worker evaluates them)";
    return {};
  }
  // One run per protocol and precision, as from kbv.sqlite. Each problem's distinct solutions (by
  // the record's solution hash) are its samples: a job kbv eval --run --queue submitted carries its
  // sample id (the run folder's); the others (kbv serve's, or from a queue of schema version 2)
  // take the lowest free numbers in the order their first jobs were submitted (the database
  // clock's; jobs of the same millisecond in id order). A solution done again (other options of
  // the same protocol) keeps its number and its newest record.
  struct Group {
    std::string protocol, precision;
    std::map<std::tuple<int, int, std::string>, int> sample_of;  // (level, problem, solution) -> sample id
    std::map<std::pair<int, int>, std::set<int>> taken;          // (level, problem) -> sample ids given
    std::map<std::tuple<int, int, int>, Record> latest;
  };
  std::vector<std::pair<const queue::Job*, Record>> records;  // in the order the jobs were done
  for (const auto& job : *jobs) {
    RecordRead read = record_from_json(job.record);
    if (!read.ok()) {
      warnings.push_back(fmt::format("{}: job {}: its record does not read ({}); left out", shown, job.id, read.error));
      continue;
    }
    records.emplace_back(&job, std::move(read.record));
  }
  const auto group_name = [](const Record& r) {
    const std::string precision = r.precision_or_default();
    return r.protocol.name.value_or("kbv") + (precision == "fp32" ? "" : " " + precision);
  };
  const auto solution_of = [](const queue::Job& job, const Record& r) {
    return r.solution_hash.value_or(job.spec.key());
  };
  std::map<std::string, Group> groups;
  std::vector<size_t> by_submission(records.size());
  for (size_t i = 0; i < records.size(); ++i) by_submission[i] = i;
  std::stable_sort(by_submission.begin(), by_submission.end(), [&](size_t a, size_t b) {
    return std::tie(records[a].first->created_at, records[a].first->id) <
           std::tie(records[b].first->created_at, records[b].first->id);
  });
  // The sample ids the jobs carry first, then the lowest free ones for the rest.
  size_t without = 0;  // jobs without a sample id
  for (const auto& [job, r] : records) without += job->spec.sample_id ? 0 : 1;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i : by_submission) {
      const auto& [job, r] = records[i];
      if ((pass == 0) != job->spec.sample_id.has_value()) continue;
      Group& g = groups[group_name(r)];
      g.protocol = r.protocol.name.value_or("kbv");
      g.precision = r.precision_or_default();
      auto [at, fresh] = g.sample_of.try_emplace({r.level, r.problem_id, solution_of(*job, r)}, 0);
      if (!fresh) continue;
      std::set<int>& taken = g.taken[{r.level, r.problem_id}];
      int id = pass == 0 ? *job->spec.sample_id : 0;
      if (pass == 1 || taken.count(id)) {  // a carried id taken by another solution (not from one run folder)
        id = 0;
        while (taken.count(id)) ++id;
      }
      taken.insert(id);
      at->second = id;
    }
  }
  for (auto& [job, r] : records) {
    Group& g = groups[group_name(r)];
    r.sample_id = g.sample_of.at({r.level, r.problem_id, solution_of(*job, r)});
    g.latest.insert_or_assign({r.level, r.problem_id, r.sample_id}, std::move(r));
  }
  std::vector<LoadedRun> out;
  for (auto& [name, g] : groups) {
    LoadedRun run;
    run.name = groups.size() > 1 ? fmt::format("{} [{}]", shown, name) : shown;
    run.dir = shown;
    run.protocol = g.protocol;
    run.precision = g.precision;
    for (auto& [key, record] : g.latest) run.records.push_back(std::move(record));
    run.notes.push_back(
        without == 0
            ? fmt::format("{} record(s) from the done jobs of {}, numbered with the run folder's sample ids",
                          run.records.size(), shown)
            : fmt::format("{} record(s) from the done jobs of {}; {} of {} job(s) carry no run folder's sample id "
                          "(kbv serve's, or submitted before queue schema 3): those samples are numbered in the "
                          "order they were submitted",
                          run.records.size(), shown, without, records.size()));
    out.push_back(std::move(run));
  }
  if (out.empty()) error = fmt::format("{}: none of its {} done job(s) has a record that reads", shown, jobs->size());
  return out;
}

}  // namespace kbv
