// KernelBench / KernelBench-Verified files <-> kbv records.
#include "formats/upstream.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formats/eval_results.h"
#include "formats/json_read.h"
#include "problem/problem.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/text.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string string_of(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_null()) return {};
  return it->dump();
}

bool bool_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::vector<std::string> failed_configs(const json& metadata) {
  std::vector<std::string> out;
  auto it = metadata.find("hidden_failed_configs");
  if (it == metadata.end()) return out;
  if (it->is_array()) {
    for (const auto& c : *it) out.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  } else if (it->is_string() && !it->get<std::string>().empty()) {
    out.push_back(it->get<std::string>());
  }
  return out;
}

// The first error text upstream left in an entry's metadata.
std::string upstream_error(const json& metadata) {
  for (const char* key : {"compilation_error", "runtime_error", "cuda_error", "other_error", "error_message",
                          "gpu_error", "correctness_issue"}) {
    std::string s = string_of(metadata, key);
    if (!s.empty()) return s;
  }
  return {};
}

struct Entry {
  int problem_id = 0;
  int sample_id = 0;
  std::string key;
  const json* value = nullptr;
};

// Entries of either shape; a key or value that fits neither is a warning naming it.
std::vector<Entry> entries_of(const json& file, const fs::path& path, std::string& format,
                              std::vector<std::string>& warnings) {
  static const std::regex plain(R"(^(\d+)$)"), verified(R"(^(\d+)_(\d+)$)");
  std::vector<Entry> out;
  std::set<std::string> formats;
  for (const auto& [key, value] : file.items()) {
    std::smatch m;
    if (std::regex_match(key, m, verified) && value.is_object()) {
      formats.insert("kernelbench-verified");
      out.push_back({std::stoi(m[1]), std::stoi(m[2]), key, &value});
    } else if (std::regex_match(key, m, plain) && value.is_array()) {
      formats.insert("kernelbench");
      int pid = std::stoi(m[1]);
      for (size_t i = 0; i < value.size(); ++i) {
        const json& e = value[i];
        if (!e.is_object()) {
          warnings.push_back(fmt::format("{}: \"{}\"[{}] is not an object; skipped", path.string(), key, i));
          continue;
        }
        auto sid = e.find("sample_id");
        out.push_back(
            {pid, sid != e.end() && sid->is_number_integer() ? sid->get<int>() : static_cast<int>(i), key, &e});
      }
    } else if (std::regex_match(key, m, plain) && value.is_object()) {  // older KernelBench: one entry
      formats.insert("kernelbench");
      auto sid = value.find("sample_id");
      out.push_back(
          {std::stoi(m[1]), sid != value.end() && sid->is_number_integer() ? sid->get<int>() : 0, key, &value});
    } else {
      warnings.push_back(
          fmt::format("{}: key \"{}\" is neither \"<problem id>\" with a list of samples nor "
                      "\"<problem id>_<sample id>\" with one; skipped",
                      path.string(), key));
    }
  }
  format = formats.size() == 1 ? *formats.begin() : formats.empty() ? "kernelbench" : "mixed";
  return out;
}

}  // namespace

UpstreamRead read_eval_results(const fs::path& eval_file, const std::optional<fs::path>& hidden_file, int level,
                               const fs::path& run_dir) {
  UpstreamRead out;
  auto file = parse_json_file(eval_file, out.error);
  if (!file) return out;
  if (!file->is_object()) {
    out.error = eval_file.string() + ": expected an object keyed by problem id (\"3\") or \"<problem id>_<sample id>\"";
    return out;
  }
  std::vector<Entry> entries = entries_of(*file, eval_file, out.format, out.warnings);
  // JSON object keys come in string order ("10" before "2"): order the records numerically.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.problem_id, a.sample_id) < std::pair(b.problem_id, b.sample_id);
  });

  std::optional<json> hidden;
  std::map<std::pair<int, int>, const json*> hidden_by_slot;
  std::vector<Entry> hidden_entries;
  if (hidden_file) {
    std::string error, hidden_format;
    hidden = parse_json_file(*hidden_file, error);
    if (!hidden || !hidden->is_object()) {
      out.error = hidden ? hidden_file->string() + ": expected an object like eval_results.json" : error;
      return out;
    }
    hidden_entries = entries_of(*hidden, *hidden_file, hidden_format, out.warnings);
    for (const auto& e : hidden_entries) hidden_by_slot[{e.problem_id, e.sample_id}] = e.value;
  }

  std::set<std::pair<int, int>> seen;
  int missing_hidden = 0;
  for (const auto& e : entries) {
    if (!seen.insert({e.problem_id, e.sample_id}).second) {
      out.warnings.push_back(fmt::format("{}: problem {} sample {} appears twice; the first entry is kept",
                                         eval_file.string(), e.problem_id, e.sample_id));
      continue;
    }
    const json& v = *e.value;
    json metadata = v.contains("metadata") && v["metadata"].is_object() ? v["metadata"] : json::object();
    const bool compiled = bool_of(v, "compiled");
    const bool standard = bool_of(v, "correctness");

    Imported kb;
    kb.format = out.format;
    kb.key = e.key;
    kb.standard_correctness = standard;
    if (auto pm = positive_number(v, "peak_memory")) kb.peak_memory = *pm;
    if (v.contains("memory_stats") && v["memory_stats"].is_object() && !v["memory_stats"].empty())
      kb.unknown.extra["memory_stats"] = v["memory_stats"];
    std::string verdict, message;
    if (!compiled) {
      std::string err = upstream_error(metadata);
      verdict = metadata.contains("runtime_error") || metadata.contains("other_error") ? "runtime_error"
                : metadata.contains("cuda_error") || metadata.contains("gpu_error")    ? "crashed"
                                                                                       : "compile_error";
      message = err.empty() ? "did not compile (upstream left no error text)" : "upstream: " + first_line(err, 300);
    } else if (!standard && string_of(metadata, "eval_status") == "timeout") {
      // KernelBench-Verified's eval_from_generations.py: the sample's evaluation ran past its limit.
      verdict = "timeout";
      std::optional<double> limit = positive_number(metadata, "timeout_s");
      message = limit ? fmt::format("upstream: the evaluation timed out after {:g} s", *limit)
                      : std::string("upstream: the evaluation timed out");
    } else if (!standard && string_of(metadata, "eval_status") == "eval_exception") {
      // The harness itself raised while evaluating the sample (its text in "error").
      verdict = "runtime_error";
      std::string err = string_of(metadata, "error");
      message = "upstream: the evaluation raised" + (err.empty() ? std::string() : ": " + first_line(err, 300));
    } else if (!standard) {
      verdict = metadata.contains("runtime_error") ? "runtime_error" : "wrong_output";
      std::string err = upstream_error(metadata);
      std::string trials = string_of(metadata, "correctness_trials");
      message = !err.empty() ? "upstream: " + first_line(err, 300)
                             : "failed upstream's correctness check" + (trials.empty() ? "" : " " + trials);
    } else {
      verdict = "correct";
      message = "passed upstream's correctness check";
    }

    bool correct = standard;
    if (hidden) {
      auto h = hidden_by_slot.find({e.problem_id, e.sample_id});
      if (h != hidden_by_slot.end()) {
        const json& hv = *h->second;
        const bool hidden_ok = bool_of(hv, "correctness");
        kb.hidden_correctness = hidden_ok;
        json hmeta = hv.contains("metadata") && hv["metadata"].is_object() ? hv["metadata"] : json::object();
        kb.hidden_metadata = hmeta;
        auto failed = failed_configs(hmeta);
        if (!failed.empty()) kb.hidden_failed = failed;
        if (verdict == "correct" && !hidden_ok) {
          std::string err = string_of(hmeta, "hidden_runtime_error");
          verdict = err.empty() ? "wrong_output" : "runtime_error";
          message = "passed the standard check but failed the hidden distributions" +
                    (failed.empty() ? std::string() : fmt::format(" ({})", fmt::join(failed, ", "))) +
                    (err.empty() ? std::string() : ": " + first_line(err, 300));
        }
        correct = hidden_ok;
        if (hidden_ok && verdict != "correct") {
          // Upstream lets the hidden run decide (KernelBench-Verified's merge); say so.
          verdict = "correct";
          message = "failed the standard run but passed the hidden distributions (upstream's hidden result decides)";
        }
      } else {
        kb.hidden_correctness = false;
        if (compiled) ++missing_hidden;
        if (verdict == "correct") {
          verdict = "wrong_output";
          message = fmt::format("no entry in {}: counted as failed, as KernelBench-Verified does",
                                hidden_file->filename().string());
        }
        correct = false;
      }
    }

    fs::path kernel =
        run_dir / fmt::format("level_{}_problem_{}_sample_{}_kernel.py", level, e.problem_id, e.sample_id);
    std::error_code ec;
    bool have_kernel = fs::is_regular_file(kernel, ec);
    Record record;
    record.protocol.name = kImportProtocol;
    record.protocol.device_name = string_of(metadata, "hardware");
    record.protocol.unknown.extra = {{"format", out.format},
                                     {"source", eval_file.string()},
                                     {"hidden_source", hidden_file ? json(hidden_file->string()) : json(nullptr)}};
    record.level = level;
    record.problem_id = e.problem_id;
    record.sample_id = e.sample_id;
    record.solution = have_kernel ? kernel.string() : "";
    record.compiled = compiled;
    record.correctness = correct;
    record.verdict = parse_verdict(verdict).value_or(Verdict::pending);
    record.message = message;
    record.metadata = metadata_from_json(metadata);
    if (v.contains("runtime") && v["runtime"].is_number()) record.runtime = v["runtime"].get<double>();
    if (v.contains("runtime_stats") && v["runtime_stats"].is_object()) record.runtime_stats = v["runtime_stats"];
    record.kernelbench = kb;
    if (have_kernel) {
      FileText t = read_file(kernel);
      if (t.ok) record.solution_hash = sha256_hex(t.text);
    }
    out.records.push_back(std::move(record));
  }
  if (missing_hidden)
    out.warnings.push_back(
        fmt::format("{}: {} compiled sample(s) have no entry; counted as failing the hidden "
                    "distributions",
                    hidden_file->string(), missing_hidden));
  for (const auto& h : hidden_entries)
    if (!seen.count({h.problem_id, h.sample_id}))
      out.warnings.push_back(fmt::format("{}: problem {} sample {} has no entry in {}; ignored (no standard result)",
                                         hidden_file->string(), h.problem_id, h.sample_id, eval_file.string()));
  return out;
}

std::vector<UpstreamFile> find_upstream_files(const fs::path& run_dir) {
  std::vector<UpstreamFile> out;
  std::error_code ec;
  auto hidden_for = [&](const std::string& name) -> std::optional<fs::path> {
    fs::path p = run_dir / name;
    std::error_code e;
    if (fs::is_regular_file(p, e)) return p;
    return std::nullopt;
  };
  if (fs::is_regular_file(run_dir / "eval_results.json", ec))
    out.push_back({run_dir / "eval_results.json", hidden_for("eval_results_hidden.json"), std::nullopt});
  static const std::regex per_level(R"(^eval_results_level(\d+)\.json$)");
  std::vector<UpstreamFile> levels;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, per_level)) continue;
    int level = std::stoi(m[1]);
    levels.push_back({it->path(), hidden_for(fmt::format("eval_results_hidden_level{}.json", level)), level});
  }
  std::sort(levels.begin(), levels.end(), [](const auto& a, const auto& b) { return *a.level < *b.level; });
  out.insert(out.end(), levels.begin(), levels.end());
  return out;
}

std::optional<int> infer_run_level(const fs::path& run_dir) {
  RunDiscovery d = discover_run(run_dir);
  std::set<int> levels;
  for (const auto& s : d.samples) levels.insert(s.level);
  if (levels.size() == 1) return *levels.begin();
  return std::nullopt;
}

namespace {

// KernelBench-Verified names its hidden configs config_1..config_N in its hidden-test order, which
// is kbv's D1..D4 (x1, x3, x0.01, x-1); other names pass through.
std::string config_name(const std::string& distribution) {
  static const std::regex d(R"(^D(\d+)$)");
  std::smatch m;
  return std::regex_match(distribution, m, d) ? "config_" + m[1].str() : distribution;
}

// The largest max_abs_error over a trial's outputs, when it compared any.
std::optional<double> max_abs_error(const TrialResult& t) {
  if (!t.comparisons || !t.comparisons->is_array()) return std::nullopt;
  std::optional<double> worst;
  for (const auto& c : *t.comparisons)
    if (c.is_object() && c.contains("max_abs_error") && c["max_abs_error"].is_number()) {
      const double x = c["max_abs_error"].get<double>();
      if (!worst || x > *worst) worst = x;
    }
  return worst;
}

std::string reason_text(const TrialResult& t) {
  if (!t.reason) return "";
  return t.reason->is_string() ? t.reason->get<std::string>() : t.reason->dump();
}

// What upstream's harness writes into metadata for a kbv record's own trials: max_difference for
// failed D1 trials (upstream's standard check; generate_leaderboard --fp32_tolerance re-thresholds
// on it), and for the hidden file the hidden run's own keys, per config.
void add_trial_metadata(const Record& r, bool hidden, nlohmann::ordered_json& metadata) {
  std::vector<std::string> max_difference, hidden_max, hidden_errors;
  std::set<std::string> configs, failed;
  for (const TrialResult& t : r.distributions) {
    if (t.unknown.absent.count("distribution")) continue;
    const std::string config = config_name(t.distribution);
    configs.insert(config);
    if (t.passed.value_or(true)) continue;
    failed.insert(config);
    std::optional<double> diff = max_abs_error(t);
    if (t.distribution == "D1" && diff) max_difference.push_back(fmt::format("{:.6f}", *diff));
    if (!hidden) continue;
    if (diff)
      hidden_max.push_back(fmt::format("{}: {:.6f}", config, *diff));
    else if (std::string why = reason_text(t); !why.empty())
      hidden_errors.push_back(fmt::format("{}: {}", config, why.substr(0, 200)));
  }
  if (!max_difference.empty()) metadata["max_difference"] = max_difference;
  if (!hidden || configs.empty()) return;
  if (!hidden_max.empty()) metadata["hidden_max_difference"] = hidden_max;
  if (!hidden_errors.empty()) metadata["hidden_runtime_error"] = hidden_errors;
  if (failed.empty())
    metadata["hidden_correctness_trials"] =
        fmt::format("({}/{} hidden configs passed)", configs.size(), configs.size());
}

}  // namespace

nlohmann::ordered_json verified_eval_results(const std::vector<Record>& records, bool hidden, const GatesOf& gates_of) {
  std::map<std::pair<int, int>, const Record*> ordered;
  for (const auto& r : records) {
    if (r.unknown.absent.count("problem_id") || r.unknown.absent.count("sample_id")) continue;
    ordered[{r.problem_id, r.sample_id}] = &r;
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, rp] : ordered) {
    const Record& r = *rp;
    ExportGates v = gates_of(r);
    const std::optional<bool> gate = hidden ? v.hidden : v.standard;
    if (!gate) continue;  // this record never ran that check
    // An imported sample that had no hidden entry stays without one (upstream's leaderboard warns
    // about it and counts it as failed), rather than becoming an explicit `false`.
    const bool imported = r.kernelbench.has_value();
    if (hidden && imported && !r.kernelbench->hidden_metadata) continue;
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["sample_id"] = key.second;
    e["compiled"] = v.compiled;
    e["correctness"] = *gate;
    nlohmann::ordered_json metadata;
    if (hidden && imported) {
      metadata = nlohmann::ordered_json(*r.kernelbench->hidden_metadata);  // the hidden run's own, as read
    } else {
      metadata = r.unknown.absent.count("metadata") ? nlohmann::ordered_json::object()
                                                    : nlohmann::ordered_json(to_json(r.metadata));
      if (!imported) add_trial_metadata(r, hidden, metadata);
      // KernelBench has no flaky status: the failed check is counted (correctness false where it
      // decides) and the instability is said here (docs/METRICS.md).
      if (r.verdict == Verdict::flaky) metadata["kbv_flaky"] = r.message;
      if (hidden) {
        std::vector<std::string> configs;
        for (const auto& d : v.failed_distributions) configs.push_back(config_name(d));
        if (!configs.empty() || !metadata.contains("hidden_failed_configs")) metadata["hidden_failed_configs"] = configs;
      }
    }
    e["metadata"] = metadata;
    // Upstream's runtime is the mean of its timed trials; kbv's record keeps the median, so the
    // export writes the mean (runtime_stats.mean) where kbv timed it (docs/METRICS.md).
    double runtime = r.runtime;
    if (!imported && runtime > 0 && r.runtime_stats.is_object() && r.runtime_stats.contains("mean") &&
        r.runtime_stats["mean"].is_number())
      runtime = r.runtime_stats["mean"].get<double>();
    // Rounded as upstream's get_timing_stats rounds (3 significant digits), as kbv's verified
    // table compares it (report/summary.cc mean_speedup); the record keeps them whole.
    e["runtime"] = upstream_rounded(runtime);  // -1 (not timed) stays -1
    e["runtime_stats"] = r.unknown.absent.count("runtime_stats") ? nlohmann::ordered_json::object()
                                                                 : upstream_runtime_stats(r.runtime_stats);
    if (!imported && runtime > 0) e["metadata"][kTimingRoundingKey] = kTimingRoundingNote;
    // Peak memory: kbv's measurement, else what an import carried.
    auto positive = [](std::optional<double> x) -> std::optional<double> {
      if (!x || !(*x > 0) || !std::isfinite(*x)) return std::nullopt;
      return x;
    };
    std::optional<double> peak;
    if (r.memory && r.memory->measured.value_or(false) && r.memory->candidate)
      peak = positive(r.memory->candidate->peak_bytes);
    if (!peak && r.kernelbench) peak = positive(r.kernelbench->peak_memory);
    if (peak) {
      e["peak_memory"] = *peak;
      // KernelBench-Verified's memory_stats: {peak_bytes, hardware, device}.
      nlohmann::ordered_json stats = {{"peak_bytes", *peak}};
      stats["hardware"] = r.metadata.hardware.value_or("");
      stats["device"] = r.metadata.device.value_or("");
      if (imported && r.kernelbench->unknown.extra.contains("memory_stats"))
        stats = nlohmann::ordered_json(r.kernelbench->unknown.extra["memory_stats"]);
      e["memory_stats"] = stats;
    }
    out[fmt::format("{}_{}", key.first, key.second)] = std::move(e);
  }
  return out;
}

}  // namespace kbv
