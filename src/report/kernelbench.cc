// KernelBench's eval_results.json shape from kbv records.
#include "report/kernelbench.h"

#include <map>
#include <string>

namespace kbv {
namespace {

bool as_bool(const nlohmann::json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_boolean() && it->get<bool>();
}

nlohmann::ordered_json as_object(const nlohmann::json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_object()) return nlohmann::ordered_json::object();
  return nlohmann::ordered_json(*it);
}

double as_runtime(const nlohmann::json& record) {
  auto it = record.find("runtime");
  if (it == record.end() || !it->is_number()) return -1.0;
  return it->get<double>();
}

bool as_int(const nlohmann::json& record, const char* key, int& value) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_number_integer()) return false;
  value = it->get<int>();
  return true;
}

}  // namespace

nlohmann::ordered_json kernelbench_eval_results(const std::vector<nlohmann::json>& records) {
  // problem id -> sample id -> record; std::map keeps both in numeric order.
  std::map<int, std::map<int, const nlohmann::json*>> by_problem;
  for (const auto& record : records) {
    if (!record.is_object()) continue;
    int problem_id = 0, sample_id = 0;
    if (!as_int(record, "problem_id", problem_id) || !as_int(record, "sample_id", sample_id)) {
      continue;
    }
    by_problem[problem_id][sample_id] = &record;  // the later record wins
  }

  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [problem_id, samples] : by_problem) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [sample_id, record] : samples) {
      nlohmann::ordered_json entry = nlohmann::ordered_json::object();
      entry["sample_id"] = sample_id;
      entry["compiled"] = as_bool(*record, "compiled");
      entry["correctness"] = as_bool(*record, "correctness");
      entry["metadata"] = as_object(*record, "metadata");
      entry["runtime"] = as_runtime(*record);
      entry["runtime_stats"] = as_object(*record, "runtime_stats");
      list.push_back(std::move(entry));
    }
    out[std::to_string(problem_id)] = std::move(list);
  }
  return out;
}

}  // namespace kbv
