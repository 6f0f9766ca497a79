#include "service/options.h"

#include <fmt/format.h>

#include "supervisor/option_table.h"

namespace kbv::service {
using nlohmann::json;

namespace {

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// This server's limits on top of the option's own rules: "" or the message after "options.KEY: ".
std::string server_limit(const std::string& key, const json& c, const OptionLimits& limits) {
  if (key == "trials" && c.get<int64_t>() > limits.max_trials)
    return fmt::format("must be at most {}, got {}", limits.max_trials, shown(c));
  if (key == "timeout_build" || key == "timeout_load" || key == "timeout_call") {
    const double most = key == "timeout_build"  ? limits.max_timeouts.build_s
                        : key == "timeout_load" ? limits.max_timeouts.load_s
                                                : limits.max_timeouts.call_s;
    if (c.get<double>() > most) return fmt::format("must be at most {:g} (this server's limit), got {}", most, shown(c));
  }
  return "";
}

}  // namespace

const std::vector<std::string>& option_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& o : eval_option_table()) k.push_back(o.name);
    return k;
  }();
  return keys;
}

CheckedOptions check_options(const json& options, const OptionLimits& limits) {
  CheckedOptions out;
  if (!options.is_null() && !options.is_object()) {
    out.error = "options: expected an object of kbv eval's options, got " + shown(options);
    return out;
  }
  if (options.is_object()) {
    for (const auto& [key, value] : options.items()) {
      const EvalOption* opt = find_eval_option(key);
      if (!opt || opt->name != key) {  // JSON keys are spelled with underscores
        std::string keys;
        for (const auto& k : option_keys()) keys += (keys.empty() ? "" : ", ") + k;
        out.error = fmt::format("options.{}: unknown option; the options are: {}", key, keys);
        return out;
      }
      json canonical;
      std::string e = check_option_value(*opt, value, canonical);
      if (e.empty()) e = server_limit(key, canonical, limits);
      if (!e.empty()) {
        out.error = fmt::format("options.{}: {}", key, e);
        return out;
      }
      out.canonical[key] = std::move(canonical);
    }
  }
  // Defaults that do not depend on the server's other flags, so that {} and the same options
  // spelled out are one evaluation (one job key).
  json& c = out.canonical;
  if (!c.contains("device") && !limits.device.empty()) c["device"] = limits.device;
  if (std::optional<OptionError> e = finish_eval_options(c)) out.error = fmt::format("options.{}: {}", e->key, e->message);
  return out;
}

std::string apply_options(const json& c, EvalOptions& o) { return apply_eval_options(c, o); }

}  // namespace kbv::service
