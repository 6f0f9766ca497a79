// The evaluation options, one table: every option an evaluation may ask for (kbv eval's flags, the
// JSON options of kbv serve and of a queued job), with its type, its rules, its help text and how
// it applies to EvalOptions. kbv eval's flags (src/cli/common_flags.cc) and kbv serve's options
// (src/service/options.cc) are both made from it, so an option added here is a flag and a serve
// option at once (docs/SERVICE.md, "Options"). What the evaluating host decides (--python,
// --cache-dir, --sandbox) is not in it: a job or a client cannot choose those.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv {

enum class OptionKind {
  choice,    // one of `choices` (a string; on/off choices also take true/false)
  list,      // one or more of `choices`: a list of strings, or one string joined with commas
  whole,     // an integer in [low, high]
  positive,  // a number greater than 0 (at most `high` when high > 0)
  range,     // a number in [low, high]
  seed,      // an integer at least 0 (64 bits)
};

struct EvalOption {
  std::string name;  // the JSON key ("time_cap"); the flag is --time-cap
  OptionKind kind = OptionKind::choice;
  std::string help;
  std::vector<std::string> choices;  // choice, list
  double low = 0, high = 0;          // whole, range: [low, high]; positive: (0, high], no bound when 0
  std::string fill;                  // a choice's default, always present in canonical options; "" none
  // Applies a canonical value (check_option_value's) to the options. Throws nlohmann::json's
  // exceptions on a value of the wrong type (apply_eval_options catches them).
  std::function<void(const nlohmann::json& value, EvalOptions& options)> apply;

  std::string flag() const;  // "--time-cap"
};

// In the order they apply (the protocol before what it resets) and are listed.
const std::vector<EvalOption>& eval_option_table();
// The option named `name` (JSON key "time_cap" or flag name "time-cap"); nullptr when none.
const EvalOption* find_eval_option(std::string_view name);

// A JSON value -> its canonical form (typed: strings, integers, doubles, a list of strings).
// "" or the message that follows "options.KEY: " ("must be greater than 0, got 0").
std::string check_option_value(const EvalOption& option, const nlohmann::json& value, nlohmann::json& canonical);
// The same for a value as typed on a command line ("3", "1e-3", "tf32,fp32").
std::string parse_option_text(const EvalOption& option, const std::string& text, nlohmann::json& canonical);

struct OptionError {
  std::string key;      // the option it is about
  std::string message;  // what follows "options.KEY: " or "--flag: "
};
// After every value was checked: the choices' defaults filled in (so that the same evaluation
// spelled out or left to the defaults is one canonical object) and the rules between options.
std::optional<OptionError> finish_eval_options(nlohmann::json& canonical);

// Canonical options applied to `options` in the table's order; an option absent from `canonical`
// leaves `options` as it is (its fill, if any, applies). "" or why not (options that did not come
// from check_option_value).
std::string apply_eval_options(const nlohmann::json& canonical, EvalOptions& options);

}  // namespace kbv
