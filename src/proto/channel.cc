#include "proto/channel.h"

#include "util/interrupt.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <unistd.h>

namespace kbv {
namespace {

using Clock = std::chrono::steady_clock;

std::string write_all_or_error(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::strerror(errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

// Reads exactly `size` bytes before `deadline`. Returns the status of ReadResult.
ReadResult::Status read_all(int fd, char* data, size_t size, std::optional<Clock::time_point> deadline,
                            std::string& error) {
  while (size > 0) {
    if (interrupted()) {
      error = "interrupted";
      return ReadResult::Status::error;
    }
    // Wait in slices so that an interrupt is seen within a fifth of a second.
    int wait_ms = 200;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return ReadResult::Status::timeout;
      wait_ms = static_cast<int>(std::min<long long>(left, wait_ms));
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, wait_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      return ReadResult::Status::error;
    }
    if (r == 0) continue;
    ssize_t n = ::read(fd, data, size);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      error = std::strerror(errno);
      return ReadResult::Status::error;
    }
    if (n == 0) {
      error = "the worker closed its channel";
      return ReadResult::Status::eof;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return ReadResult::Status::ok;
}

}  // namespace

std::string write_message(int fd, const nlohmann::json& message) {
  std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (body.size() > kMaxMessageBytes) return "message too large";
  uint32_t n = static_cast<uint32_t>(body.size());
  unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                             static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  std::string frame(reinterpret_cast<const char*>(header), 4);
  frame += body;
  return write_all_or_error(fd, frame.data(), frame.size());
}

ReadResult read_message(int fd, std::optional<std::chrono::milliseconds> timeout) {
  ReadResult result;
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  unsigned char header[4];
  result.status = read_all(fd, reinterpret_cast<char*>(header), 4, deadline, result.error);
  if (result.status != ReadResult::Status::ok) return result;
  uint32_t n = header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
  if (n > kMaxMessageBytes) {
    result.status = ReadResult::Status::error;
    result.error = "message of " + std::to_string(n) + " bytes exceeds the limit";
    return result;
  }
  std::string body(n, '\0');
  result.status = read_all(fd, body.data(), n, deadline, result.error);
  if (result.status != ReadResult::Status::ok) return result;
  result.message = nlohmann::json::parse(body, nullptr, false);
  if (result.message.is_discarded() || !result.message.is_object()) {
    result.status = ReadResult::Status::error;
    result.error = "malformed message (not a JSON object)";
    result.framed = true;
  }
  return result;
}

}  // namespace kbv
