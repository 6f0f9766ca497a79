// One finding: of the static analysis (src/lint), of the runtime audits, of the timing and memory
// phases. The record's `findings[]` entries are these (docs/RECORD.md).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "record/unknown.h"

namespace kbv {

struct Finding {
  std::string rule;      // "kernel_not_called"
  std::string severity;  // "reject" | "warn"
  std::string message;   // one sentence a user can act on
  std::string evidence;  // where: "trial 0 D1", "timing.wall_check"; empty: file:line: code below
  std::string cheat;     // "T1".."T17"; empty (null in JSON) for findings that are not a cheat class
  // The static analysis' location (evidence "file:line: code" when `evidence` is empty).
  std::string file;
  int line = 0;          // 1-based line in `file`
  std::string code;      // that line, trimmed
  Unknown unknown;       // keys of a stored finding kbv does not know

  std::string evidence_text() const;  // `evidence`, else "file:line: code"
  bool rejects() const { return severity == "reject"; }
  // {"rule", "severity", "message", "evidence", "cheat"} (cheat null when empty): the only place
  // a finding's JSON is written.
  nlohmann::json to_json() const;
  // A stored finding; keys it does not know (and keys of an unexpected type) stay in `unknown`.
  static Finding from_json(const nlohmann::json& j);
};

// A runtime finding (evidence a free text; cheat "" for none).
Finding make_finding(std::string rule, std::string severity, std::string message, std::string evidence,
                     std::string cheat);

}  // namespace kbv
