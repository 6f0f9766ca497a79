// Wall-clock stamps for records and caches.
#pragma once
#include <string>

namespace kbv {

// Now in UTC, ISO 8601 to the second: "2026-12-03T08:52:41Z".
std::string utc_now();

}  // namespace kbv
