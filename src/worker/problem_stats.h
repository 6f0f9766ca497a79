// `kbv lint-problems` (src/supervisor/problem_lint.h): statistics of the reference on one hidden
// distribution, for the supervisor to turn into findings (op lint). Two draws A and B (seeds[0],
// seeds[1]) and a second call on A (redrawn from its seed; right before the call, blocks the size
// of A's outputs are filled with NaN and freed, so a reference returning unwritten memory shows).
// Per output: non-finite counts, and the protocol's comparison of B's expected output against A's
// output (a replayed output), all zeros and a constant (the mean of A's output); A against its
// repeat; and A against a float64 run. Nothing is exported: the lint never involves a candidate.
//
// LintReply::inputs: per input {index, dtype, sizes, floating, integer_valued?} or {index, value}.
// LintReply::outputs: per output {index, dtype, sizes, numel, repeat, fp64?, reference_error?, nan,
// inf, mean?, std?, max_abs?, other_draw, zeros, constant}; then entries {fp64_skipped} or {note}.
#pragma once
#include "proto/messages.h"

namespace kbv {

struct ReferenceState;

msg::LintReply problem_statistics(ReferenceState& s, const msg::LintRequest& request);

}  // namespace kbv
