// What a stored JSON object held that its struct does not type (record.h).
#pragma once
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace kbv {

// Unknown keys (and known keys of an unexpected type, verbatim) in `extra`; in `absent` the
// always-written keys the stored object lacked (an older record), which to_json leaves out again.
// A number field stored as a JSON integer (bytes: 4096) is written back as one while its value is
// whole. A round trip JSON -> struct -> JSON is thus exact.
struct Unknown {
  nlohmann::json extra = nlohmann::json::object();
  std::set<std::string> absent;
  std::set<std::string> integers;  // number fields the stored object held as JSON integers
};

}  // namespace kbv
