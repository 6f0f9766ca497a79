// Wall-clock stamps for records and caches, and timeouts in seconds as durations.
#pragma once
#include <chrono>
#include <string>

namespace kbv {

// Now in UTC, ISO 8601 to the second: "2026-12-03T08:52:41Z".
std::string utc_now();

// A timeout of `seconds` (a double, as the options hold them) as a duration for a worker call.
inline std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

}  // namespace kbv
