// `kbv problems`: the problems of a dataset root and, loaded by a reference worker, the shapes of
// one get_inputs() draw of each, drawn on torch's meta device (no tensor allocated) unless
// get_inputs() needs values.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "problem/problem.h"
#include "supervisor/run.h"
#include "util/outcome.h"

namespace kbv {

struct ProblemListOptions {
  std::filesystem::path dir;   // a dataset root
  std::optional<int> level;
  bool shapes = true;          // load each problem and describe one draw of its inputs
  EvalOptions eval;            // device and worker
};

struct ProblemListing {
  ProblemRef problem;
  nlohmann::json inputs;  // shapes: [{"dtype", "sizes"} | {"value"}, ...]; null when not asked or failed
  std::string shapes;     // the same in one line: "float32[16x64], 3"; "error: ..." when it failed
  std::string error;      // why the problem could not be described
  std::string draw;       // "meta" (shapes without tensors) or "real" (drawn with values: draw_note says why)
  std::string draw_note;
  std::string sizes;      // --cpu-sizes: what was scaled and kept (the shapes are at those sizes)
  std::string model;      // "meta" (the Model built without its parameters' memory) or "real" (model_note says why)
  std::string model_note;
};

struct ProblemListResult {
  Outcome outcome;  // input_error: the dataset or the worker is unusable
  std::vector<ProblemListing> problems;
};

// Lists the dataset's problems (warnings of the discovery through `notify`).
ProblemListResult list_problems(const ProblemListOptions& options, const Notify& notify);

}  // namespace kbv
