#include "service/options.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "lint/finding.h"
#include "measure/measure.h"
#include "protocol/registry.h"
#include "supervisor/precision.h"

namespace kbv::service {
using nlohmann::json;

namespace {

const std::vector<std::string> kKeys = {
    "device",       "protocol",    "policy",         "precision",     "trials",        "tolerance",
    "seed",         "timing",      "rse",            "time_cap",      "timing_inputs", "timing_sets",
    "flush_bytes",  "launch_hold_us", "baselines",   "timeout_build", "timeout_load",  "timeout_call",
    "cpu_threads"};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Each checker returns "" or the message after "options.KEY: ".
std::string member(const json& v, const std::vector<std::string>& allowed, std::string& out) {
  if (!v.is_string()) return "expected a string (" + join(allowed) + "), got " + shown(v);
  out = v.get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), out) == allowed.end())
    return fmt::format("must be one of {}, got '{}'", join(allowed), out);
  return "";
}

std::string number(const json& v, double& out) {
  if (!v.is_number()) return "expected a number, got " + shown(v);
  out = v.get<double>();
  return "";
}

std::string positive(const json& v, double& out) {
  if (std::string e = number(v, out); !e.empty()) return e;
  return out > 0 ? "" : fmt::format("must be greater than 0, got {}", shown(v));
}

// A positive integer no larger than `most` (JSON integers only: 2.5 trials is an error).
std::string positive_int(const json& v, int64_t most, int64_t& out) {
  if (!v.is_number_integer()) return "expected a whole number, got " + shown(v);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(most))
    return fmt::format("must be at most {}, got {}", most, shown(v));
  out = v.get<int64_t>();
  if (out <= 0) return fmt::format("must be greater than 0, got {}", shown(v));
  if (out > most) return fmt::format("must be at most {}, got {}", most, shown(v));
  return "";
}

std::string check_one(const std::string& key, const json& v, const OptionLimits& limits, json& canonical) {
  std::string s;
  double d = 0;
  int64_t n = 0;
  std::string e;
  if (key == "device") {
    e = member(v, {"cuda", "cpu"}, s);
    if (e.empty()) canonical[key] = s;
  } else if (key == "protocol") {
    e = member(v, protocol_names(), s);
    if (e.empty()) canonical[key] = s;
  } else if (key == "policy") {
    e = member(v, {"strict", "lenient"}, s);
    if (e.empty()) canonical[key] = s;
  } else if (key == "precision") {
    e = member(v, {"fp32", "bf16", "fp16"}, s);
    if (e.empty()) canonical[key] = s;
  } else if (key == "timing") {
    if (v.is_boolean()) canonical[key] = v.get<bool>() ? "on" : "off";
    else if (e = member(v, {"on", "off"}, s); e.empty()) canonical[key] = s;
  } else if (key == "timing_inputs") {
    e = member(v, {"fresh", "sets"}, s);
    if (e.empty()) canonical[key] = s;
  } else if (key == "trials") {
    e = positive_int(v, limits.max_trials, n);
    if (e.empty()) canonical[key] = n;
  } else if (key == "timing_sets") {
    e = positive_int(v, 1024, n);
    if (e.empty()) canonical[key] = n;
  } else if (key == "cpu_threads") {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 4096)
      e = "expected a whole number in [0, 4096] (0: every CPU), got " + shown(v);
    else
      canonical[key] = v.get<int64_t>();
  } else if (key == "flush_bytes") {
    e = positive_int(v, int64_t{1} << 40, n);
    if (e.empty()) canonical[key] = n;
  } else if (key == "seed") {
    if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
      e = "expected a whole number at least 0, got " + shown(v);
    else
      canonical[key] = v.get<uint64_t>();
  } else if (key == "tolerance" || key == "rse" || key == "time_cap") {
    e = positive(v, d);
    if (e.empty()) canonical[key] = d;
  } else if (key == "launch_hold_us") {
    e = number(v, d);
    if (e.empty() && (d < 0 || d > kMaxLaunchHoldUs))
      e = fmt::format("must be in [0, {:g}], got {}", kMaxLaunchHoldUs, shown(v));
    if (e.empty()) canonical[key] = d;
  } else if (key == "baselines") {
    std::vector<std::string> items;
    if (v.is_string()) {
      std::stringstream in(v.get<std::string>());
      for (std::string item; std::getline(in, item, ',');) items.push_back(item);
    } else if (v.is_array()) {
      for (const auto& item : v) {
        if (!item.is_string()) return "expected names (tf32, fp32, compile), got " + shown(v);
        items.push_back(item.get<std::string>());
      }
    } else {
      return "expected a list of tf32, fp32, compile, got " + shown(v);
    }
    if (items.empty()) return "expected at least one of tf32, fp32, compile, got " + shown(v);
    for (const auto& item : items)
      if (std::string m = member(json(item), {"tf32", "fp32", "compile"}, s); !m.empty()) return m;
    canonical[key] = items;
  } else if (key == "timeout_build" || key == "timeout_load" || key == "timeout_call") {
    double most = key == "timeout_build"  ? limits.max_timeouts.build_s
                  : key == "timeout_load" ? limits.max_timeouts.load_s
                                          : limits.max_timeouts.call_s;
    e = positive(v, d);
    if (e.empty() && d > most) e = fmt::format("must be at most {:g} (this server's limit), got {}", most, shown(v));
    if (e.empty()) canonical[key] = d;
  }
  return e;
}

}  // namespace

const std::vector<std::string>& option_keys() { return kKeys; }

CheckedOptions check_options(const json& options, const OptionLimits& limits) {
  CheckedOptions out;
  if (!options.is_null() && !options.is_object()) {
    out.error = "options: expected an object of kbv eval's options, got " + shown(options);
    return out;
  }
  if (options.is_object()) {
    for (const auto& [key, value] : options.items()) {
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        out.error = fmt::format("options.{}: unknown option; the options are: {}", key, join(kKeys));
        return out;
      }
      if (std::string e = check_one(key, value, limits, out.canonical); !e.empty()) {
        out.error = fmt::format("options.{}: {}", key, e);
        return out;
      }
    }
  }
  // Defaults that do not depend on the server's other flags, so that {} and the same options
  // spelled out are one evaluation (one job key).
  json& c = out.canonical;
  if (!c.contains("device") && !limits.device.empty()) c["device"] = limits.device;
  if (!c.contains("protocol")) c["protocol"] = "kbv";
  if (!c.contains("policy")) c["policy"] = "strict";
  if (!c.contains("precision")) c["precision"] = "fp32";
  if (!c.contains("timing")) c["timing"] = "on";
  if (c.contains("timing_inputs") && c["timing_inputs"] == "fresh" && c.contains("timing_sets")) {
    out.error = "options.timing_sets: only with timing_inputs 'sets' (fresh draws have no input sets)";
    return out;
  }
  return out;
}

std::string apply_options(const json& c, EvalOptions& o) {
  if (!c.is_object()) return "options: expected an object, got " + shown(c);
  try {
    std::string protocol = c.value("protocol", "kbv");
    auto named = protocol_by_name(protocol);
    if (auto* m = std::get_if<std::string>(&named)) return "options.protocol: " + *m;
    o.protocol = std::get<Protocol>(named);
    if (c.contains("trials")) o.protocol.trials = c["trials"].get<int>();
    set_precision(o.protocol, c.value("precision", "fp32"));
    if (c.contains("tolerance")) o.protocol.atol = o.protocol.rtol = o.protocol.rel_l2 = c["tolerance"].get<double>();
    if (c.contains("seed")) o.protocol.seed = c["seed"].get<uint64_t>();
    std::optional<Policy> policy = parse_policy(c.value("policy", "strict"));
    if (!policy) return "options.policy: must be strict or lenient, got " + shown(c["policy"]);
    o.protocol.policy = *policy;
    o.protocol.timing.enabled = c.value("timing", "on") == "on";
    if (c.contains("rse")) o.protocol.timing.rule.rse_target = c["rse"].get<double>();
    if (c.contains("time_cap")) o.protocol.timing.rule.time_cap_s = c["time_cap"].get<double>();
    int sets = c.contains("timing_sets") ? c["timing_sets"].get<int>() : -1;
    if (sets > 0) o.protocol.timing.sets = sets;
    if (c.contains("timing_inputs")) o.protocol.timing.fresh = c["timing_inputs"] == "fresh";
    else if (sets > 0) o.protocol.timing.fresh = false;
    if (c.contains("flush_bytes")) o.protocol.timing.flush_bytes = c["flush_bytes"].get<uint64_t>();
    if (c.contains("launch_hold_us")) o.protocol.timing.launch_hold_us = c["launch_hold_us"].get<double>();
    if (c.contains("cpu_threads")) o.protocol.timing.cpu_threads = c["cpu_threads"].get<int>();
    if (c.contains("baselines")) o.protocol.timing.baselines = c["baselines"].get<std::vector<std::string>>();
    if (c.contains("device")) o.device = c["device"].get<std::string>();
    if (c.contains("timeout_build")) o.timeouts.build_s = c["timeout_build"].get<double>();
    if (c.contains("timeout_load")) o.timeouts.load_s = c["timeout_load"].get<double>();
    if (c.contains("timeout_call")) o.timeouts.call_s = c["timeout_call"].get<double>();
  } catch (const json::exception& e) {
    return std::string("options: a value of the wrong type (") + e.what() + ")";
  }
  return "";
}

}  // namespace kbv::service
