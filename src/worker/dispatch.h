// A role's ops: a table from op to handler (worker/worker.cc looks the request's op up in the
// table of the worker's role). A handler parses its request struct, runs, and returns the wire
// reply; a request that does not parse is a protocol_error naming the field.
#pragma once
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "worker/python.h"

namespace kbv {

using Handler = std::function<nlohmann::json(const nlohmann::json& request)>;
using OpTable = std::map<msg::Op, Handler>;

// The handler of `Request` running `run(const Request&)`, which returns a reply struct.
template <class Request, class Run> Handler typed_handler(Run run) {
  return [run](const nlohmann::json& j) -> nlohmann::json {
    Request request{};
    if (std::string e = msg::from_json(j, request); !e.empty())
      throw WorkerError{"protocol_error", fmt::format("a malformed '{}' request: {}", msg::op_name(Request::op), e), ""};
    return msg::to_json(run(request));
  };
}

}  // namespace kbv
