// KernelBench's eval_results.json shape from kbv records.
#include "formats/eval_results.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <system_error>

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
  entry["runtime"] = upstream_rounded(record.runtime);  // -1 (not timed) stays -1
  entry["runtime_stats"] = record.unknown.absent.count("runtime_stats") ? nlohmann::ordered_json::object()
                                                                        : upstream_runtime_stats(record.runtime_stats);
  // Said where kbv measured the timing (an imported record's stats are upstream's, already rounded).
  if (record.runtime > 0 && !record.kernelbench) entry["metadata"][kTimingRoundingKey] = kTimingRoundingNote;
  return entry;
}

}  // namespace

double upstream_rounded(double x) {
  if (!std::isfinite(x)) return x;
  // to_chars with a precision is printf's %.3g in the C locale: the exact binary value rounded to
  // nearest, an exact tie to even, as Python's format rounds it; from_chars reads it back exactly.
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, x, std::chars_format::general, 3);
  if (written.ec != std::errc()) return x;  // cannot happen: "-1.23e-308" is 10 characters
  double out = x;
  const auto read = std::from_chars(text, written.ptr, out);
  // Only "1.8e+308" (x within a rounding of the largest double) is out of range: Python's float()
  // reads it as infinity, and so does this.
  if (read.ec == std::errc::result_out_of_range) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return out;
}

nlohmann::ordered_json upstream_runtime_stats(const nlohmann::json& stats) {
  nlohmann::ordered_json out(stats);
  if (!out.is_object()) return out;
  for (const char* key : {"mean", "std", "min", "max"})
    if (out.contains(key) && out[key].is_number()) out[key] = upstream_rounded(out[key].get<double>());
  return out;
}

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
