// KernelBench's eval_results.json: {"<pid>": [{"sample_id", "compiled", "correctness",
// "metadata", "runtime", "runtime_stats"}, ...]}, problem ids sorted numerically, samples by id.
#pragma once
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

}  // namespace kbv
