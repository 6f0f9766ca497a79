// KernelBench's eval_results.json shape from kbv records.
#include "formats/eval_results.h"

#include <map>
#include <string>

namespace kbv {

namespace {

bool has_slot(const Record& record) {
  return !record.unknown.absent.count("problem_id") && !record.unknown.absent.count("sample_id");
}

nlohmann::ordered_json entry_of(const Record& record) {
  nlohmann::ordered_json entry = nlohmann::ordered_json::object();
  entry["sample_id"] = record.sample_id;
  entry["compiled"] = record.compiled;
  entry["correctness"] = record.correctness;
  entry["metadata"] = record.unknown.absent.count("metadata") ? nlohmann::ordered_json::object()
                                                               : nlohmann::ordered_json(to_json(record.metadata));
  // KernelBench has no flaky status: correctness false, and why here (docs/METRICS.md).
  if (record.verdict == Verdict::flaky) entry["metadata"]["kbv_flaky"] = record.message;
  entry["runtime"] = record.runtime;
  entry["runtime_stats"] = record.unknown.absent.count("runtime_stats")
                               ? nlohmann::ordered_json::object()
                               : nlohmann::ordered_json(record.runtime_stats);
  return entry;
}

}  // namespace

nlohmann::ordered_json kernelbench_eval_results(const std::vector<Record>& records) {
  // problem id -> sample id -> record; std::map keeps both in numeric order.
  std::map<int, std::map<int, const Record*>> by_problem;
  for (const auto& record : records) {
    if (!has_slot(record)) continue;
    by_problem[record.problem_id][record.sample_id] = &record;  // the later record wins
  }

  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [problem_id, samples] : by_problem) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [sample_id, record] : samples) list.push_back(entry_of(*record));
    out[std::to_string(problem_id)] = std::move(list);
  }
  return out;
}

void EvalResultsFile::put(const Record& record) {
  if (!has_slot(record)) return;
  entries_[record.problem_id][record.sample_id] = entry_of(record);
  ++made_;
}

nlohmann::ordered_json EvalResultsFile::json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [problem_id, samples] : entries_) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [sample_id, entry] : samples) list.push_back(entry);
    out[std::to_string(problem_id)] = std::move(list);
  }
  return out;
}

}  // namespace kbv
