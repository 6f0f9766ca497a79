// KernelBench's eval_results.json: {"<pid>": [{"sample_id", "compiled", "correctness",
// "metadata", "runtime", "runtime_stats"}, ...]}, problem ids sorted numerically, samples by id.
#pragma once
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace kbv {

// Builds the upstream shape from kbv records (each has "problem_id", "sample_id", "compiled",
// "correctness", "metadata", "runtime", "runtime_stats"; extra keys are dropped).
// A JSON object's keys are strings, so numeric order is kept with an ordered_json.
// Pass one level's records at a time: problem ids of different levels share one key space, and
// when two records share (problem_id, sample_id) the later one in input order is kept.
// A missing runtime is -1.0, missing metadata/runtime_stats {}, missing compiled/correctness
// false; a record without an integer problem_id and sample_id is left out.
nlohmann::ordered_json kernelbench_eval_results(const std::vector<Record>& records);

// Upstream's get_timing_stats (KernelBench src/kernelbench/timing.py at 423217d,
// KernelBench-Verified src/eval.py at 3fdf6fe) stores mean, std, min and max as
// float(f"{x:.3g}"): 3 significant digits, an exact tie to even as Python rounds it; its `runtime`
// and the baseline file's `mean` are such figures. The exports in upstream's formats and kbv's
// verified table round with this one function; kbv's own record keeps full precision
// (docs/PROTOCOLS.md, "Rounding in the exports"). A non-finite x comes back as it is.
double upstream_rounded(double x);
// `stats` (a record's runtime_stats) with mean, std, min and max rounded by upstream_rounded;
// every other key as it is.
nlohmann::ordered_json upstream_runtime_stats(const nlohmann::json& stats);
// Said in each exported entry's metadata whose timing kbv measured (docs/PROTOCOLS.md).
inline constexpr const char* kTimingRoundingKey = "kbv_timing_rounding";
inline constexpr const char* kTimingRoundingNote =
    "runtime and runtime_stats mean, std, min, max rounded to 3 significant digits as upstream's "
    "get_timing_stats does; kbv's record keeps them at full precision";

// One level's eval_results.json kept current record by record, for a run that rewrites the file
// after every sample: each record is turned into its entry once (put), so the file is no longer
// rebuilt from every record of the level each time. json() equals kernelbench_eval_results() of
// the records put, in the same order.
class EvalResultsFile {
 public:
  void put(const Record& record);  // a record without problem_id or sample_id is left out
  nlohmann::ordered_json json() const;
  size_t entries_made() const { return made_; }  // records turned into entries so far

 private:
  std::map<int, std::map<int, nlohmann::ordered_json>> entries_;  // problem id -> sample id -> entry
  size_t made_ = 0;
};

}  // namespace kbv
