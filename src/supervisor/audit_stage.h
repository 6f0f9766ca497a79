// The runtime-audit stage of one evaluation (docs/POLICY.md, "Runtime audits"): after every trial
// passed, two more draws drive the candidate worker's audit calls (src/worker/audit.h), the
// reference checks the same-storage call, and src/check/runtime_audit.h decides.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/finding.h"

#include "supervisor/run.h"
#include "supervisor/session.h"

namespace kbv {

struct AuditOutcome {
  std::vector<Finding> findings;                      // runtime findings (record findings[])
  nlohmann::json compute;                             // the record's `compute`; null: not this stage's
  nlohmann::json details = nlohmann::json::object();  // the record's `audit`: observations, cost
  std::optional<Reply> candidate_failure;             // the candidate failed an audit call
  std::string failure_context;
};

// Never throws. A reference failure leaves the audit incomplete (details["incomplete"]), never
// the candidate's fault.
AuditOutcome run_runtime_audit(WorkerProcess& reference, WorkerProcess& candidate, const EvalOptions& options,
                               const std::string& device, uint64_t seed_a, uint64_t seed_b);

}  // namespace kbv
