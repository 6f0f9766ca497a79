// KernelBench's eval_results.json shape from kbv records.
#include "report/kernelbench.h"

#include <map>
#include <string>

namespace kbv {

nlohmann::ordered_json kernelbench_eval_results(const std::vector<Record>& records) {
  // problem id -> sample id -> record; std::map keeps both in numeric order.
  std::map<int, std::map<int, const Record*>> by_problem;
  for (const auto& record : records) {
    if (record.unknown.absent.count("problem_id") || record.unknown.absent.count("sample_id")) continue;
    by_problem[record.problem_id][record.sample_id] = &record;  // the later record wins
  }

  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [problem_id, samples] : by_problem) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [sample_id, record] : samples) {
      nlohmann::ordered_json entry = nlohmann::ordered_json::object();
      entry["sample_id"] = sample_id;
      entry["compiled"] = record->compiled;
      entry["correctness"] = record->correctness;
      entry["metadata"] = record->unknown.absent.count("metadata") ? nlohmann::ordered_json::object()
                                                                    : nlohmann::ordered_json(to_json(record->metadata));
      entry["runtime"] = record->runtime;
      entry["runtime_stats"] = record->unknown.absent.count("runtime_stats")
                                   ? nlohmann::ordered_json::object()
                                   : nlohmann::ordered_json(record->runtime_stats);
      list.push_back(std::move(entry));
    }
    out[std::to_string(problem_id)] = std::move(list);
  }
  return out;
}

}  // namespace kbv
