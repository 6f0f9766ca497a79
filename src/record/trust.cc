// How far a record's speedups can be trusted (record/trust.h).
#include "record/trust.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kbv {
namespace {

constexpr const char* kHostBusy = "host busy";
constexpr const char* kClocksDisagreed = "clocks disagreed";
constexpr const char* kLateLaunches = "late launches";
constexpr const char* kThrottled = "throttled";
constexpr const char* kTimingCheck = "timing check failed";
constexpr const char* kBelowFloor = "below the physical floor";
constexpr const char* kTimedOutputs = "timed outputs wrong";
constexpr const char* kProcessLeft = "process left running";
constexpr const char* kReferenceDisturbed = "reference disturbed";
constexpr const char* kCacheRefused = "cache entry refused";
constexpr const char* kRoundStalled = "round stalled";
constexpr const char* kTooFewRounds = "too few rounds";
constexpr const char* kRoundsScatter = "rounds disagree";
constexpr const char* kRatioDrifted = "ratio drifted";

// A positive number at `key` of a JSON object (the timing fields kbv passes through), else 0.
double positive_at(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  return v > 0 ? v : 0;
}

}  // namespace

std::string timing_warning_label(const Finding& f) {
  if (f.severity != "warn") return "";
  if (f.rule == "timing_host_busy") return kHostBusy;
  if (f.rule == "timing_mismatch")
    return f.cheat == "T1" || f.evidence == "cuda events vs host clock" ? kClocksDisagreed : kTimingCheck;
  if (f.rule == "impossible_speed") return kBelowFloor;
  if (f.rule == "spot_check_failed") return kTimedOutputs;
  if (f.rule == "process_left_running") return kProcessLeft;
  if (f.rule == "reference_disturbed") return kReferenceDisturbed;
  if (f.rule == "cache_entry_refused") return kCacheRefused;
  if (f.rule == "timing_round_stalled") return kRoundStalled;
  if (f.rule == "timing_too_few_rounds") return kTooFewRounds;
  if (f.rule == "timing_rounds_drift") return kRatioDrifted;
  if (f.rule == "timing_rounds_disagree") return kRoundsScatter;
  return "";
}

bool is_timing_warning(const Finding& finding) { return !timing_warning_label(finding).empty(); }

const std::vector<std::string>& timing_warning_label_order() {
  static const std::vector<std::string> order = {kHostBusy,   kClocksDisagreed, kLateLaunches,  kThrottled,
                                                 kTimingCheck, kBelowFloor,      kTimedOutputs, kProcessLeft,
                                                 kReferenceDisturbed, kCacheRefused, kRoundStalled,
                                                 kTooFewRounds,       kRatioDrifted,    kRoundsScatter};
  return order;
}

std::vector<std::string> timing_warning_labels(const Record& record) {
  std::vector<std::string> seen;
  for (const auto& f : record.findings)
    if (std::string label = timing_warning_label(f); !label.empty()) seen.push_back(std::move(label));
  if (record.timing) {
    const nlohmann::json& extra = record.timing->unknown.extra;
    if (auto it = extra.find("launch_hold"); it != extra.end() && positive_at(*it, "late") > 0)
      seen.push_back(kLateLaunches);
    if (auto it = extra.find("clock"); it != extra.end() && positive_at(*it, "throttled_kept") > 0)
      seen.push_back(kThrottled);
  }
  std::vector<std::string> out;
  for (const auto& label : timing_warning_label_order())
    if (std::find(seen.begin(), seen.end(), label) != seen.end()) out.push_back(label);
  return out;
}

std::optional<std::pair<double, double>> speedup_interval(const Timing& timing, const std::string& baseline) {
  if (!timing.speedup_ci95) return std::nullopt;
  auto it = timing.speedup_ci95->find(baseline);
  if (it == timing.speedup_ci95->end() || it->second.size() != 2) return std::nullopt;
  const double low = it->second[0], high = it->second[1];
  if (!(low > 0) || !std::isfinite(low) || !std::isfinite(high) || !(low <= high)) return std::nullopt;
  return std::pair{low, high};
}

std::string speedup_text(const Timing& timing, const std::string& baseline, int precision, const std::string& x) {
  if (!timing.speedup) return "";
  auto it = timing.speedup->find(baseline);
  if (it == timing.speedup->end()) return "";
  std::string s = fmt::format("{:.{}f}{}", it->second, precision, x);
  if (auto ci = speedup_interval(timing, baseline))
    s += fmt::format(" [{:.{}f}, {:.{}f}]", ci->first, precision, ci->second, precision);
  return s;
}

std::string speedups_text(const Timing& timing) {
  std::string out;
  for (const auto& entry : timing.speedup.value_or(std::map<std::string, double>{})) {
    const std::string& mode = entry.first;
    out += fmt::format("{}{} vs {}", out.empty() ? "" : ", ", speedup_text(timing, mode), mode);
    if (speedup_interval(timing, mode)) out += fmt::format(" ({})", speedup_call_name(speedup_call(timing, mode)));
  }
  return out;
}

std::string sample_line_suffix(const Record& record) {
  std::string out;
  if (record.timing)
    if (std::string sp = speedups_text(*record.timing); !sp.empty()) out += " · speedup " + sp;
  std::string warnings;
  for (const auto& label : timing_warning_labels(record)) warnings += (warnings.empty() ? "" : ", ") + label;
  if (!warnings.empty()) out += " · timing warnings: " + warnings;
  return out;
}

}  // namespace kbv
