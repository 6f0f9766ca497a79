// Verdicts of a finished record. The protocol moved to src/protocol/ (protocol.h, registry.h);
// this header still brings it in for the files that include it.
#pragma once
#include "lint/finding.h"
#include "measure/measure.h"
#include "proto/messages.h"
#include "protocol/protocol.h"
#include "protocol/registry.h"
#include "record/decide.h"

namespace kbv {

// The verdicts of a finished record, in display order (record/record.h has their enum).
inline constexpr const char* kVerdicts[] = {"correct",  "wrong_output", "flaky", "compile_error", "runtime_error",
                                            "timeout",  "crashed",      "rejected",      "problem_error"};

}  // namespace kbv
