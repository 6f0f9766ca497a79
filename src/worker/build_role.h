// The build role: imports the candidate once so that load_inline compiles it into the extension
// cache (the candidate role loads it the same way).
#pragma once
#include <torch/extension.h>

#include "proto/messages.h"
#include "worker/dispatch.h"

namespace kbv {

// The solution executed as module kbv_candidate: a compile_error (needs_cuda for CUDA sources on
// a CPU run), or missing_model_new without `class ModelNew`.
msg::BuildReply build_solution(const msg::BuildRequest& request, pybind11::object& module);

struct BuildState {
  pybind11::object module;
};
OpTable build_ops(BuildState& s);

}  // namespace kbv
