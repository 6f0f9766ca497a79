// Supervisor <-> worker messages: a 4-byte little-endian length, then that many bytes of
// JSON. Both sides use this; it holds no torch and no Python.
//
// Requests are {"op": "...", ...}. Replies are {"ok": true, ...} or
// {"ok": false, "kind": "<verdict-ish kind>", "message": "...", "traceback": "..."}.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kbv {

// Largest message accepted (a forged length must not make a reader allocate gigabytes).
inline constexpr size_t kMaxMessageBytes = 64u << 20;

struct ReadResult {
  enum class Status { ok, eof, timeout, error } status = Status::error;
  nlohmann::json message;
  std::string error;  // for eof / error: what happened
  // error only: the whole frame was read and its body is not a JSON object, so the next message
  // starts where it should (a reader may answer it and go on).
  bool framed = false;
};

// Blocking write of one message; returns "" or an error (EPIPE when the peer died).
std::string write_message(int fd, const nlohmann::json& message);

// Reads one message, waiting at most `timeout` for all of it (std::nullopt: forever).
ReadResult read_message(int fd, std::optional<std::chrono::milliseconds> timeout);

}  // namespace kbv
