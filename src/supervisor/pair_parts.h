// The parts of one pair's evaluation (evaluate_pair, supervisor/run.h), shared between its files
// and used by nothing else: the workers' environment (reference_host.cc), the record every
// evaluation starts from and the CPU pinning (evaluate_pair.cc), the correctness checks
// (pair_checks.cc).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv {

// The environment of this evaluation's workers: CUDA_VISIBLE_DEVICES for --gpu.
std::map<std::string, std::string> device_env(const EvalOptions& options);

// The record's fields every evaluation of the pair starts with (ids, protocol, environment).
Record base_record(const Pair& pair, const EvalOptions& options, const Environment& env);

// What the correctness checks of one pair work with: the record they write into, the reference
// host (reset when the reference fails) and its loaded worker, and the candidate's worker.
struct PairChecks {
  Record& record;
  const Pair& pair;
  const EvalOptions& options;
  ReferenceHost& reference;
  WorkerProcess& ref;
  WorkerProcess& cand;
};

// How the checks went.
struct CheckTally {
  int passed = 0, total = 0;
  std::string first_failure;
  bool stopped = false;  // a check could not be made: the record says why
};

// 4. Trials x distributions, each a fresh draw from its own seed from `seeds`, then the hidden
// configs (protocol/hidden.h) once every trial passed. Writes the record's distributions,
// reference_error, flaky and correctness_trials (and its verdict when a check stops it).
CheckTally correctness_checks(const PairChecks& c, SeedSource& seeds);

}  // namespace kbv
