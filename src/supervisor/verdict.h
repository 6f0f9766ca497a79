// The protocol (every knob recorded in each result), verdicts and records.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lint/finding.h"
#include "record/decide.h"
#include "measure/measure.h"
#include "proto/messages.h"

namespace kbv {

struct Distribution {
  std::string name;  // "D1"
  double scale = 1.0;
};

struct Protocol {
  std::string name = "kbv";                 // "kbv" (KernelBench-Verified) or "kernelbench" (upstream)
  int trials = 5;
  std::vector<Distribution> distributions = {{"D1", 1.0}, {"D2", 3.0}, {"D3", 0.01}, {"D4", -1.0}};
  double atol = 1e-3;
  double rtol = 1e-3;
  double rel_l2 = 1e-3;
  bool use_rel_l2 = true;
  std::optional<uint64_t> seed;             // fixed master seed (--seed); none: secret seeds from the OS
  std::string reference_precision = "fp32-strict";  // TF32 off for the correctness reference
  // Evaluated precision (docs/PRECISION.md): fp32, bf16 or fp16; set with set_precision()
  // (supervisor/precision.h), which also scales the tolerance.
  std::string precision = "fp32";
  int construction_seed = 42;               // KernelBench: before get_init_inputs, Model, ModelNew
  // Where get_inputs() draws on a GPU run: "device" (kbv: torch.rand runs on the GPU, seconds
  // faster for multi-GiB inputs) or "host" (upstream: drawn on the CPU, then copied).
  // The correctness checks only: the measured calls (timing, memory) draw on the device under any
  // protocol (kMeasuredDraw), where only the inputs' shapes and distribution matter.
  std::string input_draw = "device";
  Policy policy = Policy::strict;           // static findings: strict rejects, lenient only warns (docs/POLICY.md)
  TimingProtocol timing;                    // the timing engine's knobs (docs/TIMING.md)
  // Identical re-runs (same seed, same scale) of the first failed check: one that passes makes the
  // verdict flaky rather than wrong_output (DESIGN.md, Flaky). 0 under --protocol kernelbench.
  int flaky_reruns = 2;

  nlohmann::json to_json() const;
  // This protocol's comparison tolerance as every worker request that compares outputs carries it.
  msg::WireTolerance wire_tolerance() const;
};

// How the measured calls' inputs are drawn (timing sets and fresh draws, the memory phase): on the
// device whatever the protocol. `input_draw = "host"` reproduces upstream's correctness values;
// timing and memory do not depend on the values, and host draws of multi-GiB inputs took most
// of an evaluation on the GPU (measurements: docs/results/).
inline constexpr const char* kMeasuredDraw = "device";

// Upstream KernelBench: trial seeds drawn from seed 42, allclose at 1e-2, no hidden distributions.
Protocol kernelbench_protocol();

// What a result depends on besides the code: protocol knobs, torch and Python versions, device.
std::string protocol_hash(const Protocol& protocol, const nlohmann::json& environment);

// Seeds for each input draw: secret (getrandom) or derived from the fixed master seed.
class SeedSource {
 public:
  explicit SeedSource(std::optional<uint64_t> master) : master_(master) {}
  uint64_t next();
 private:
  std::optional<uint64_t> master_;
  uint64_t counter_ = 0;
};

// The verdicts of a finished record, in display order (record/record.h has their enum).
inline constexpr const char* kVerdicts[] = {"correct",  "wrong_output", "flaky", "compile_error", "runtime_error",
                                            "timeout",  "crashed",      "rejected",      "problem_error"};

}  // namespace kbv
