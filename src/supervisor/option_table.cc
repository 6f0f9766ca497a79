#include "supervisor/option_table.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "lint/finding.h"
#include "measure/measure.h"
#include "protocol/registry.h"
#include "supervisor/precision.h"

namespace kbv {
using nlohmann::json;

namespace {

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string member(const json& v, const std::vector<std::string>& allowed, std::string& out) {
  if (!v.is_string()) return "expected a string (" + joined(allowed) + "), got " + shown(v);
  out = v.get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), out) == allowed.end())
    return fmt::format("must be one of {}, got '{}'", joined(allowed), out);
  return "";
}

bool on_off(const std::vector<std::string>& choices) {
  return choices == std::vector<std::string>{"on", "off"};
}

EvalOption choice(std::string name, std::vector<std::string> choices, std::string fill, std::string help,
                  std::function<void(const json&, EvalOptions&)> apply) {
  EvalOption o;
  o.name = std::move(name);
  o.kind = OptionKind::choice;
  o.choices = std::move(choices);
  o.fill = std::move(fill);
  o.help = std::move(help);
  o.apply = std::move(apply);
  return o;
}

EvalOption numeric(std::string name, OptionKind kind, double low, double high, std::string help,
                   std::function<void(const json&, EvalOptions&)> apply) {
  EvalOption o;
  o.name = std::move(name);
  o.kind = kind;
  o.low = low;
  o.high = high;
  o.help = std::move(help);
  o.apply = std::move(apply);
  return o;
}

std::vector<EvalOption> make_table() {
  using K = OptionKind;
  std::vector<EvalOption> t;
  t.push_back(choice("device", {"cuda", "cpu"}, "", "cuda or cpu (default: cuda when a GPU is visible)",
                     [](const json& v, EvalOptions& o) { o.device = v.get<std::string>(); }));
  t.push_back(choice("protocol", protocol_names(), kProtocolKbv,
                     "kbv (kbv's own: 4 hidden distributions, 1e-3 and a relative-L2 floor, audits), kernelbench-paper "
                     "(the original paper: 1e-2), kernelbench-main (KernelBench main: 1e-4), kernelbench-verified "
                     "(KernelBench-Verified: 1e-3 and hidden configs); kernelbench = kernelbench-paper "
                     "(docs/PROTOCOLS.md)",
                     [](const json& v, EvalOptions& o) {
                       // a name the choice accepted; the protocol first, the knobs after it adjust it
                       o.protocol = std::get<Protocol>(protocol_by_name(v.get<std::string>()));
                     }));
  t.push_back(numeric("trials", K::whole, 1, 1000000, "correctness trials (each over every distribution)",
                      [](const json& v, EvalOptions& o) { o.protocol.trials = v.get<int>(); }));
  t.push_back(numeric("flaky_reruns", K::whole, 0, 100,
                      "identical re-runs (same seed and inputs) of the first failed check: one that passes makes "
                      "the verdict flaky, not wrong_output (default 2; 0 under the kernelbench-* protocols; at most 100)",
                      [](const json& v, EvalOptions& o) { o.protocol.flaky_reruns = v.get<int>(); }));
  t.push_back(choice("precision", {"fp32", "bf16", "fp16"}, "fp32",
                     "fp32, bf16 or fp16: the model and floating inputs cast to it, tolerance 1e-3 (fp32) or 1e-2 "
                     "(docs/PRECISION.md)",
                     [](const json& v, EvalOptions& o) { set_precision(o.protocol, v.get<std::string>()); }));
  t.push_back(numeric("tolerance", K::positive, 0, 0, "atol = rtol = relative-L2 tolerance (default: the precision's)",
                      [](const json& v, EvalOptions& o) {
                        o.protocol.atol = o.protocol.rtol = o.protocol.rel_l2 = v.get<double>();
                      }));
  t.push_back(numeric("seed", K::seed, 0, 0, "fixed master seed (default: secret seeds from the OS)",
                      [](const json& v, EvalOptions& o) { o.protocol.seed = v.get<uint64_t>(); }));
  t.push_back(choice("policy", {"strict", "lenient"}, "strict",
                     "strict (a cheating finding of the static analysis rejects, the candidate never runs) or "
                     "lenient (findings are warnings, as upstream: docs/POLICY.md)",
                     [](const json& v, EvalOptions& o) { o.protocol.policy = parse_policy(v.get<std::string>()).value(); }));
  t.push_back(choice("timing", {"on", "off"}, "on", "time correct candidates and baselines (docs/TIMING.md)",
                     [](const json& v, EvalOptions& o) { o.protocol.timing.enabled = v.get<std::string>() == "on"; }));
  t.push_back(numeric("rse", K::positive, 0, 0, "stop sampling at this relative standard error (default 0.005)",
                      [](const json& v, EvalOptions& o) { o.protocol.timing.rule.rse_target = v.get<double>(); }));
  t.push_back(numeric("time_cap", K::positive, 0, 0, "seconds of sampling per timed callable at most (default 1)",
                      [](const json& v, EvalOptions& o) { o.protocol.timing.rule.time_cap_s = v.get<double>(); }));
  // Before timing_inputs: sets given alone means cycled sets; timing_inputs, when given, decides.
  t.push_back(numeric("timing_sets", K::whole, 1, 1024,
                      "input sets cycled through while timing with --timing-inputs sets (default 4)",
                      [](const json& v, EvalOptions& o) {
                        o.protocol.timing.sets = v.get<int>();
                        o.protocol.timing.fresh = false;
                      }));
  t.push_back(choice("timing_inputs", {"fresh", "sets"}, "",
                     "fresh (a new get_inputs() draw before every timed call, recomputed by the reference for spot "
                     "checks: no cache keyed on pointer, shape or content gains) or sets (--timing-sets input sets "
                     "cycled through); default fresh, sets when --timing-sets is given",
                     [](const json& v, EvalOptions& o) { o.protocol.timing.fresh = v.get<std::string>() == "fresh"; }));
  t.push_back(numeric("flush_bytes", K::whole, 1, static_cast<double>(int64_t{1} << 40),
                      "bytes written to flush the caches before each sample (default: 2 x L2 on a GPU, 2 x L3 up to "
                      "64 MiB on the CPU; 1: no flush)",
                      [](const json& v, EvalOptions& o) { o.protocol.timing.flush_bytes = v.get<uint64_t>(); }));
  t.push_back(numeric("launch_hold_us", K::range, 0, kMaxLaunchHoldUs,
                      fmt::format("GPU: microseconds the calling stream is held before each sample's start event, so "
                                  "the host's launch is queued when the interval begins (default {:g}; 0: no hold; at "
                                  "most {:g})",
                                  kDefaultLaunchHoldUs, kMaxLaunchHoldUs),
                      [](const json& v, EvalOptions& o) { o.protocol.timing.launch_hold_us = v.get<double>(); }));
  t.push_back(numeric("timing_pairs", K::whole, 0, kMaxTimingPairs,
                      fmt::format("paired rounds: each round times every baseline and the candidate in alternating "
                                  "blocks (ABBA), the speedup and its 95% interval come from the rounds (default {} "
                                  "with --protocol kbv, 0 with the kernelbench-* protocols; 0: candidate once, then cached baselines; "
                                  "at most {})",
                                  kDefaultTimingPairs, kMaxTimingPairs),
                      [](const json& v, EvalOptions& o) { o.protocol.timing.pairs = v.get<int>(); }));
  // No fill: absent means twin, so the job keys of options given before this one stay.
  t.push_back(choice("baseline_worker", {"twin", "reference"}, "",
                     "CPU paired rounds: time the fp32 and tf32 baselines in a twin (a candidate-kind worker whose "
                     "ModelNew is the problem's Model, so both sides run in the same kind of process; the default) or "
                     "in the reference worker (docs/TIMING.md \"The baselines' twin\")",
                     [](const json& v, EvalOptions& o) { o.protocol.timing.baseline_worker = v.get<std::string>(); }));
  t.push_back(numeric("cpu_threads", K::whole, 0, 4096,
                      fmt::format("CPU: threads for the candidate and the baselines alike, both pinned to the same "
                                  "set of that many CPUs, picked by kbv (default {}; 0: every CPU kbv may run on; "
                                  "docs/TIMING.md)",
                                  kDefaultCpuThreads),
                      [](const json& v, EvalOptions& o) { o.protocol.timing.cpu_threads = v.get<int>(); }));
  EvalOption baselines;
  baselines.name = "baselines";
  baselines.kind = K::list;
  baselines.choices = {"tf32", "fp32", "compile"};
  baselines.help = "baselines to time: tf32,fp32[,compile] (default tf32,fp32)";
  baselines.apply = [](const json& v, EvalOptions& o) {
    o.protocol.timing.baselines = v.get<std::vector<std::string>>();
  };
  t.push_back(std::move(baselines));
  t.push_back(numeric("timeout_build", K::positive, 0, 0,
                      fmt::format("seconds to compile a candidate (default {:g})", Timeouts{}.build_s),
                      [](const json& v, EvalOptions& o) { o.timeouts.build_s = v.get<double>(); }));
  t.push_back(numeric("timeout_load", K::positive, 0, 0,
                      fmt::format("seconds to load a problem or construct ModelNew (default {:g})", Timeouts{}.load_s),
                      [](const json& v, EvalOptions& o) { o.timeouts.load_s = v.get<double>(); }));
  t.push_back(numeric("timeout_call", K::positive, 0, 0,
                      fmt::format("seconds for one forward call (default {:g})", Timeouts{}.call_s),
                      [](const json& v, EvalOptions& o) { o.timeouts.call_s = v.get<double>(); }));
  t.push_back(choice("fast_build", {"on", "off"}, "",
                     "compile candidates with a precompiled torch/extension.h and lld (same machine code; "
                     "DESIGN.md, The compile step); off: as load_inline alone compiles (default on)",
                     [](const json& v, EvalOptions& o) { o.fast_build = v.get<std::string>() == "on"; }));
  return t;
}

// An integer in [low, high], with the messages kbv serve has always given.
std::string whole(const EvalOption& opt, const json& v, json& out) {
  if (!v.is_number_integer()) return "expected a whole number, got " + shown(v);
  const auto high = static_cast<int64_t>(opt.high), low = static_cast<int64_t>(opt.low);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(high))
    return fmt::format("must be at most {}, got {}", high, shown(v));
  const auto n = v.get<int64_t>();
  if (n < low) return low == 1 ? fmt::format("must be greater than 0, got {}", shown(v))
                               : fmt::format("must be at least {}, got {}", low, shown(v));
  if (n > high) return fmt::format("must be at most {}, got {}", high, shown(v));
  out = n;
  return "";
}

}  // namespace

std::string EvalOption::flag() const {
  std::string f = "--" + name;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

const std::vector<EvalOption>& eval_option_table() {
  static const std::vector<EvalOption> table = make_table();
  return table;
}

const EvalOption* find_eval_option(std::string_view name) {
  std::string key(name);
  std::replace(key.begin(), key.end(), '-', '_');
  for (const auto& o : eval_option_table())
    if (o.name == key) return &o;
  return nullptr;
}

std::string check_option_value(const EvalOption& opt, const json& v, json& out) {
  std::string s;
  switch (opt.kind) {
    case OptionKind::choice:
      if (v.is_boolean() && on_off(opt.choices)) {
        out = v.get<bool>() ? "on" : "off";
        return "";
      }
      if (std::string e = member(v, opt.choices, s); !e.empty()) return e;
      out = s;
      return "";
    case OptionKind::list: {
      std::vector<std::string> items;
      const std::string names = joined(opt.choices);
      if (v.is_string()) {
        std::stringstream in(v.get<std::string>());
        for (std::string item; std::getline(in, item, ',');) items.push_back(item);
      } else if (v.is_array()) {
        for (const auto& item : v) {
          if (!item.is_string()) return "expected names (" + names + "), got " + shown(v);
          items.push_back(item.get<std::string>());
        }
      } else {
        return "expected a list of " + names + ", got " + shown(v);
      }
      if (items.empty()) return "expected at least one of " + names + ", got " + shown(v);
      for (const auto& item : items)
        if (std::string e = member(json(item), opt.choices, s); !e.empty()) return e;
      out = items;
      return "";
    }
    case OptionKind::whole:
      return whole(opt, v, out);
    case OptionKind::seed:
      if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
        return "expected a whole number at least 0, got " + shown(v);
      out = v.get<uint64_t>();
      return "";
    case OptionKind::positive:
    case OptionKind::range: {
      if (!v.is_number()) return "expected a number, got " + shown(v);
      const double d = v.get<double>();
      if (opt.kind == OptionKind::positive && !(d > 0)) return fmt::format("must be greater than 0, got {}", shown(v));
      if (opt.kind == OptionKind::positive && opt.high > 0 && d > opt.high)
        return fmt::format("must be at most {:g}, got {}", opt.high, shown(v));
      if (opt.kind == OptionKind::range && !(d >= opt.low && d <= opt.high))
        return fmt::format("must be in [{:g}, {:g}], got {}", opt.low, opt.high, shown(v));
      out = d;
      return "";
    }
  }
  return "an option of an unknown kind";
}

std::string parse_option_text(const EvalOption& opt, const std::string& text, json& out) {
  json value;
  switch (opt.kind) {
    case OptionKind::choice:
    case OptionKind::list:
      value = text;
      break;
    case OptionKind::whole:
    case OptionKind::seed:
    case OptionKind::positive:
    case OptionKind::range: {
      // The number as JSON reads it: "3" an integer, "2.5" or "1e-3" a double (a whole number's
      // check then says so), anything else not a number.
      const bool integral = !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
      errno = 0;
      char* end = nullptr;
      if (integral && text[0] == '-') {
        long long n = std::strtoll(text.c_str(), &end, 10);
        if (errno == 0 && end && *end == '\0') value = static_cast<int64_t>(n);
      } else if (integral) {
        unsigned long long n = std::strtoull(text.c_str(), &end, 10);
        if (errno == 0 && end && *end == '\0') value = static_cast<uint64_t>(n);
      } else if (!text.empty()) {
        double d = std::strtod(text.c_str(), &end);
        if (errno == 0 && end && *end == '\0') value = d;
      }
      if (value.is_null()) {
        const bool number = opt.kind == OptionKind::positive || opt.kind == OptionKind::range;
        return fmt::format("expected {}, got '{}'", number ? "a number" : "a whole number", text);
      }
      break;
    }
  }
  return check_option_value(opt, value, out);
}

std::optional<OptionError> finish_eval_options(json& c) {
  for (const auto& opt : eval_option_table())
    if (!opt.fill.empty() && !c.contains(opt.name)) c[opt.name] = opt.fill;
  // An alias and its protocol are one evaluation (one job key): the registry's name.
  if (c.contains("protocol") && c["protocol"].is_string())
    if (std::string name = canonical_protocol_name(c["protocol"].get<std::string>()); !name.empty()) c["protocol"] = name;
  if (c.contains("timing_inputs") && c["timing_inputs"] == "fresh" && c.contains("timing_sets"))
    return OptionError{"timing_sets", "only with timing_inputs 'sets' (fresh draws have no input sets)"};
  return std::nullopt;
}

std::string apply_eval_options(const json& c, EvalOptions& o) {
  if (!c.is_object()) return "options: expected an object, got " + shown(c);
  for (const auto& opt : eval_option_table()) {
    const bool given = c.contains(opt.name) && !c[opt.name].is_null();
    if (!given && opt.fill.empty()) continue;
    const json value = given ? c[opt.name] : json(opt.fill);
    // The values were checked once (check_option_value); checked again here, so that options
    // from elsewhere cannot reach an apply with a value out of its range.
    json canonical;
    if (std::string e = check_option_value(opt, value, canonical); !e.empty())
      return fmt::format("options.{}: {}", opt.name, e);
    try {
      opt.apply(canonical, o);
    } catch (const std::exception& e) {
      return fmt::format("options.{}: {}", opt.name, e.what());
    }
  }
  return "";
}

}  // namespace kbv
