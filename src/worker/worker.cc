// The kbv worker: a Python extension module whose C++ runs the harness (DESIGN.md, "worker").
// Python only hosts the problem or the candidate; every decision (inputs, seeds, comparisons,
// what is sent where) is made here, in C++, from messages (proto/messages.h) on fds 3 (in) and
// 4 (out). Each role has its own state and its own table of ops:
//   reference  loads the problem (trusted); makes inputs and expected outputs; judges outputs
//              (worker/reference.*, worker/problem_stats.*, worker/timing_ops.*).
//   candidate  loads the candidate; computes on the inputs it is handed; exports its outputs
//              (worker/candidate.*, worker/timing_ops.*).
//   build      imports the candidate once so that load_inline compiles it into the cache
//              (worker/build_role.*).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/extension.h>

#include "proto/channel.h"
#include "worker/cpu_sampler.h"
#include "worker/zygote.h"
#include "proto/messages.h"
#include "worker/build_role.h"
#include "worker/candidate.h"
#include "worker/python.h"
#include "worker/reference.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {
namespace {

msg::HelloReply hello(const std::string& role) {
  py::module_ torch = py::module_::import("torch");
  msg::HelloReply r;
  r.pid = getpid();
  r.role = role;
  r.torch_version = py::str(torch.attr("__version__")).cast<std::string>();
  r.python_version = py::module_::import("platform").attr("python_version")().cast<std::string>();
#ifdef KBV_WITH_CUDA
  r.cuda_built = true;
#endif
  if (torch.attr("cuda").attr("is_available")().cast<bool>()) {
    r.cuda_available = true;
    r.device_count = torch.attr("cuda").attr("device_count")().cast<int>();
    r.device_name = torch.attr("cuda").attr("get_device_name")(0).cast<std::string>();
  }
  return r;
}

// One role's state and op table.
struct Role {
  std::unique_ptr<ReferenceState> reference;
  std::unique_ptr<CandidateState> candidate;
  std::unique_ptr<BuildState> build;
  OpTable ops;
};

std::optional<Role> make_role(const std::string& name, int in_fd, int out_fd) {
  Role r;
  if (name == "reference") {
    r.reference = std::make_unique<ReferenceState>();
    r.reference->in_fd = in_fd;
    r.reference->out_fd = out_fd;
    r.ops = reference_ops(*r.reference);
  } else if (name == "candidate") {
    r.candidate = std::make_unique<CandidateState>();
    r.candidate->in_fd = in_fd;
    r.candidate->out_fd = out_fd;
    r.ops = candidate_ops(*r.candidate);
  } else if (name == "build") {
    r.build = std::make_unique<BuildState>();
    r.ops = build_ops(*r.build);
  } else {
    return std::nullopt;
  }
  r.ops[msg::Op::hello] = typed_handler<msg::HelloRequest>([name](const auto&) { return hello(name); });
  r.ops[msg::Op::ping] = typed_handler<msg::PingRequest>([](const auto&) { return msg::Done{}; });
  return r;
}

json failure(const WorkerError& e) { return msg::to_json(msg::Failure{e.kind, e.message, e.traceback}); }

// The reply to one request: the handler of its op in the role's table, every error a failed reply.
json answer(const Role& role, const std::string& role_name, const json& request) {
  try {
    std::optional<msg::Op> op = msg::op_of(request);
    if (!op)
      throw WorkerError{"protocol_error",
                        fmt::format("a request without a known op: {}", request.dump().substr(0, 120)), ""};
    auto it = role.ops.find(*op);
    if (it == role.ops.end())
      throw WorkerError{"protocol_error", fmt::format("op '{}' is not known to the {} role", msg::op_name(*op), role_name),
                        ""};
    return it->second(request);
  } catch (const WorkerError& e) {
    return failure(e);
  } catch (py::error_already_set& e) {
    return failure(python_error("runtime_error", "unexpected Python error", e));
  } catch (const c10::Error& e) {
    return failure(WorkerError{"runtime_error", e.what_without_backtrace(), ""});
  } catch (const std::exception& e) {
    return failure(WorkerError{"runtime_error", e.what(), ""});
  }
}

int serve(const std::string& role_name, int in_fd, int out_fd) {
  audit::read_own_dir();  // before any candidate code (worker/cpu_sampler.h)
  // The protocol fds must not leak into compilers or anything the candidate starts.
  fcntl(in_fd, F_SETFD, FD_CLOEXEC);
  fcntl(out_fd, F_SETFD, FD_CLOEXEC);
  std::optional<Role> role = make_role(role_name, in_fd, out_fd);
  if (!role) {
    std::fprintf(stderr, "kbv worker: unknown role '%s' (reference, candidate, build)\n", role_name.c_str());
    return 1;
  }
  for (;;) {
    ReadResult r = read_message(in_fd, std::nullopt);
    if (r.status == ReadResult::Status::eof) return 0;  // supervisor gone: exit quietly
    if (r.status == ReadResult::Status::error && r.framed) {  // a whole frame that is not a request
      if (!write_message(out_fd, failure(WorkerError{"protocol_error", "a malformed request: " + r.error, ""})).empty())
        return 1;
      continue;
    }
    if (r.status != ReadResult::Status::ok) {
      std::fprintf(stderr, "kbv worker: %s\n", r.error.c_str());
      return 1;
    }
    if (msg::op_of(r.message) == msg::Op::exit) return 0;
    if (!write_message(out_fd, answer(*role, role_name, r.message)).empty()) return 1;
  }
}

}  // namespace
}  // namespace kbv

PYBIND11_MODULE(kbv_worker, m) {
  m.doc() = "kbv worker harness (C++); see DESIGN.md";
  m.def("serve", &kbv::serve, py::arg("role"), py::arg("in_fd") = 3, py::arg("out_fd") = 4);
  m.def("zygote", &kbv::zygote);
}
