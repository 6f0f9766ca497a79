// KernelBench's baseline timing file: read, labelled, applied to imported records, written.
#include "formats/baseline.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>

#include <fmt/format.h>

#include "formats/eval_results.h"
#include "formats/json_read.h"
#include "problem/problem.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

std::string native_baseline_label(const std::string& name) {
  if (name == "tf32") return "TF32";
  if (name == "fp32") return "FP32 (strict)";
  if (name == "compile") return "torch.compile";
  return name;
}

std::pair<std::string, fs::path> parse_baseline_arg(const std::string& arg) {
  auto eq = arg.find('=');
  if (eq != std::string::npos && eq > 0 && arg.find('/') > eq) return {arg.substr(0, eq), arg.substr(eq + 1)};
  std::string file = fs::path(arg).filename().string();
  std::string name = file.find("tf32") != std::string::npos      ? "tf32"
                     : file.find("compile") != std::string::npos ? "compile"
                                                                 : "fp32";
  return {name, arg};
}

std::string baseline_file_label(const std::string& name, const fs::path& path, bool kbv_export) {
  if (kbv_export) return native_baseline_label(name);
  std::string file = path.filename().string();
  for (char& c : file) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (file.find("bf16") != std::string::npos) return "BF16 (PyTorch defaults)";
  if (file.find("fp16") != std::string::npos) return "FP16 (PyTorch defaults)";
  if (name == "tf32") return "TF32 matmuls and convolutions";
  if (name == "compile") return "torch.compile (PyTorch defaults: TF32 convolutions)";
  if (name == "fp32") return "FP32 matmuls, TF32 convolutions (PyTorch defaults)";
  return name;
}

std::optional<BaselineTimes> read_baseline_file(const fs::path& path, const std::string& name, std::string& error) {
  auto j = parse_json_file(path, error);
  if (!j) return std::nullopt;
  if (!j->is_object()) {
    error = path.string() + ": expected an object {\"level1\": {\"<problem file>\": {\"mean\": ms, ...}}}";
    return std::nullopt;
  }
  BaselineTimes b;
  b.name = name;
  b.path = path;
  static const std::regex level_key(R"(^level(\d+)$)");
  int levels = 0;
  bool kbv_export = false;  // kbv's own export: its entries carry "median", upstream's do not
  for (const auto& [key, problems] : j->items()) {
    std::smatch m;
    if (!std::regex_match(key, m, level_key) || !problems.is_object()) continue;
    ++levels;
    int level = std::stoi(m[1]);
    for (const auto& [file, entry] : problems.items()) {
      auto id = parse_problem_id(file);
      if (!id || !entry.is_object()) continue;
      auto mean = positive_number(entry, "mean");
      if (!mean) continue;
      kbv_export = kbv_export || entry.contains("median");
      BaselineTimes::Entry e;
      e.problem = file;
      e.mean_ms = *mean;
      e.peak_bytes = positive_number(entry, "peak_memory");
      b.entries[{level, *id}] = e;
    }
  }
  if (levels == 0) {
    error =
        path.string() + ": no \"level<N>\" object; expected {\"level1\": {\"<problem file>\": {\"mean\": ms, ...}}}";
    return std::nullopt;
  }
  b.label = baseline_file_label(name, path, kbv_export);
  return b;
}

bool apply_baseline(Record& record, const BaselineTimes& baseline) {
  if (!record.kernelbench) return false;
  auto it = baseline.entries.find({record.level, record.problem_id});
  if (it == baseline.entries.end()) return false;
  const auto& e = it->second;
  bool changed = false;
  if (record.problem.empty()) {
    record.problem = e.problem;
    record.unknown.absent.erase("problem");
    record.unknown.extra.erase("problem");
    changed = true;
  }
  if (record.runtime > 0 && std::isfinite(record.runtime)) {
    if (!record.timing) record.timing.emplace();
    Timing& timing = *record.timing;
    if (!timing.speedup || !timing.speedup->count(baseline.name)) {
      if (!timing.method) timing.method = "kernelbench-import: upstream runtime (mean ms) against a baseline file's mean";
      if (!timing.candidate) timing.candidate.emplace();
      timing.candidate->mean_ms = record.runtime;
      if (!timing.baselines || !timing.baselines->is_object()) timing.baselines = json::object();
      (*timing.baselines)[baseline.name] = {
          {"mean_ms", e.mean_ms}, {"source", baseline.path.string()}, {"measured", baseline.label}};
      if (!timing.speedup) timing.speedup.emplace();
      (*timing.speedup)[baseline.name] = e.mean_ms / record.runtime;
      changed = true;
    }
  }
  std::optional<double> peak = record.kernelbench->peak_memory;
  if (peak && (!(*peak > 0) || !std::isfinite(*peak))) peak.reset();
  if (peak && e.peak_bytes) {
    if (!record.memory) record.memory.emplace();
    Memory& memory = *record.memory;
    if (!memory.ratio || !memory.ratio->count(baseline.name)) {
      memory.measured = true;
      memory.method = "kernelbench-verified peak_memory (torch.cuda.max_memory_allocated)";
      if (!memory.candidate) memory.candidate.emplace();
      memory.candidate->peak_bytes = *peak;
      if (!memory.baselines || !memory.baselines->is_object()) memory.baselines = json::object();
      (*memory.baselines)[baseline.name] = {{"peak_bytes", *e.peak_bytes}, {"source", baseline.path.string()}};
      if (!memory.ratio) memory.ratio.emplace();
      (*memory.ratio)[baseline.name] = *e.peak_bytes / *peak;
      changed = true;
    }
  }
  return changed;
}

std::optional<int> baseline_level_key(const std::string& key) {
  int level = 0;
  if (key.rfind("level", 0) != 0 || std::sscanf(key.c_str() + 5, "%d", &level) != 1) return std::nullopt;
  return level;
}

bool baseline_entry_timed(const json& e) { return e.is_object() && e.contains("mean") && e["mean"].is_number(); }

namespace {

// e[key] when it is a number, else `otherwise` (absent, null, a string: json::value would throw).
template <typename T>
T number_or(const json& e, const char* key, T otherwise) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<T>() : otherwise;
}

}  // namespace

Stats baseline_entry_stats(const json& e) {
  Stats s;
  s.mean_ms = e["mean"].get<double>();
  s.median_ms = number_or(e, "median", s.mean_ms);  // KernelBench records no median: its mean stands in
  s.std_ms = number_or(e, "std", 0.0);
  s.min_ms = number_or(e, "min", s.mean_ms);
  s.max_ms = number_or(e, "max", s.mean_ms);
  s.samples = number_or(e, "num_trials", 0);
  return s;
}

void add_baseline_entry(json& file, int level, const std::string& problem_file, const json& s,
                        const std::string& hardware, const std::string& device) {
  // mean, std, min and max as upstream's baseline files store them (3 significant digits): the
  // figures its scoring and kbv's verified table divide by. kbv's median, and its cache, whole.
  file[fmt::format("level{}", level)][problem_file] = {{"mean", upstream_rounded(s.value("mean_ms", 0.0))},
                                                       {"std", upstream_rounded(s.value("std_ms", 0.0))},
                                                       {"min", upstream_rounded(s.value("min_ms", 0.0))},
                                                       {"max", upstream_rounded(s.value("max_ms", 0.0))},
                                                       {"median", s.value("median_ms", 0.0)},
                                                       {"num_trials", s.value("samples", 0)},
                                                       {"hardware", hardware},
                                                       {"device", device}};
}

}  // namespace kbv
