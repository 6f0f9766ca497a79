// `kbv eval`'s flags as a JSON object, for evaluations that arrive over the API or through the
// queue (docs/SERVICE.md, "Options"): checked with the same rules as the flags, made canonical (so
// that the same evaluation asked twice has the same job key), and applied to EvalOptions.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv::service {

// What a server lets a client ask for beyond the flags' own rules.
struct OptionLimits {
  std::string device;          // the server's device ("cpu" | "cuda"): the default of "device"
  int max_trials = 100;
  Timeouts max_timeouts;       // a client may lower a timeout, never raise it above these
};

struct CheckedOptions {
  nlohmann::json canonical = nlohmann::json::object();  // every key typed, defaults filled in
  std::string error;  // "options.trials: must be greater than 0, got 0"; empty when valid
  bool ok() const { return error.empty(); }
};

// The keys a client may give, in the order docs/SERVICE.md lists them.
const std::vector<std::string>& option_keys();

// Checks `options` (a JSON object; null means {}) as `kbv eval` checks its flags: an unknown key,
// a wrong type or a value outside the flag's range is an error naming the key, what was expected
// and what was given. Every key is one of kbv eval's flags (underscores for dashes), so a
// `kbv worker` can hand the canonical options to kbv eval's own flag parser.
CheckedOptions check_options(const nlohmann::json& options, const OptionLimits& limits);

// The EvalOptions of canonical options on top of `base` (the server's cache, Python, sandbox,
// timeouts): the same mapping as `kbv eval`'s flags. "" or why not (options that did not come
// from check_options).
std::string apply_options(const nlohmann::json& canonical, EvalOptions& base);

}  // namespace kbv::service
