// The candidate role: loads the candidate (built as the build role builds it), computes on the
// inputs it is handed, exports its outputs, runs the runtime audits; its timed calls are in
// worker/timing_ops.*.
#pragma once
#include "worker/audit.h"
#include "worker/dispatch.h"
#include "worker/hosted.h"
#include "worker/timing_ops.h"

namespace kbv {

struct CandidateState {
  Hosted h;
  CandidateAudit audit;  // the runtime audits (worker/audit.h)
  TimingInputs timing;
  // The protocol fds: the candidate asks the supervisor for each fresh draw in the middle of a
  // timing request (msg::DrawAsk).
  int in_fd = 3, out_fd = 4;
};

OpTable candidate_ops(CandidateState& s);
void release_trial(CandidateState& s);

}  // namespace kbv
