// Markdown, CSV and JSON renderings of a report.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/render.h"

namespace kbv {
namespace {

std::string md_escape(const std::string& s, size_t max = 0) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else
      out += c;
  }
  if (max && out.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    out = out.substr(0, cut) + "…";
  }
  return out;
}

void md_table(std::string& out, const Table& t, size_t max_cell = 0) {
  out += "| " + fmt::format("{}", fmt::join(t.header, " | ")) + " |\n|";
  // Numbers right-aligned: a column whose cells all carry a numeric sort key.
  for (size_t i = 0; i < t.header.size(); ++i) {
    bool numeric = i > 0 && !t.rows.empty();
    for (const auto& row : t.rows)
      numeric = numeric && (i >= row.size() || (row[i].sort && !row[i].left) || row[i].tone == "na");
    out += numeric ? "---:|" : "---|";
  }
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& c : row) out += " " + md_escape(c.text, max_cell) + " |";
    out += "\n";
  }
  out += "\n";
}

// One line per row: a multi-line message (compiler output) is joined with spaces.
std::string one_line(const std::string& s) {
  std::string out;
  bool newline = false;
  for (char c : s) {
    if (c == '\n' || c == '\r') {
      newline = true;
      continue;
    }
    if (newline && (c == ' ' || c == '\t')) continue;  // the next line's indentation
    if (newline && !out.empty()) out += ' ';
    newline = false;
    out += c;
  }
  return out;
}

std::string csv_field(const std::string& raw) {
  const std::string s = one_line(raw);
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

template <class T>
nlohmann::ordered_json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json speed_json(const SpeedMetrics& m) {
  nlohmann::ordered_json j;
  j["measured"] = m.measured;
  j["slots"] = m.slots;
  j["correct"] = m.correct;
  j["timed"] = m.timed;
  nlohmann::ordered_json fp = nlohmann::ordered_json::object();
  for (size_t i = 0; i < kFastPThresholds.size(); ++i)
    fp[fmt::format("{:g}", kFastPThresholds[i])] = m.measured ? nlohmann::ordered_json(m.fast_p[i]) : nullptr;
  j["fast_p"] = fp;
  j["fast_p_definition"] = fast_p_mode_name(m.mode);
  nlohmann::ordered_json uncertain = nlohmann::ordered_json::object();
  for (size_t i = 0; i < kFastPThresholds.size(); ++i)
    uncertain[fmt::format("{:g}", kFastPThresholds[i])] = m.fast_p_uncertain[i];
  j["fast_p_uncertain"] = uncertain;
  j["timed_without_interval"] = m.timed_without_interval;
  auto interval = [&](const std::optional<Interval>& ci) {
    return m.measured && ci ? nlohmann::ordered_json::array({ci->first, ci->second}) : nlohmann::ordered_json(nullptr);
  };
  j["geomean_speedup_correct"] = m.measured ? optional_json(m.geomean_correct) : nullptr;
  j["geomean_speedup_correct_ci95"] = interval(m.geomean_correct_ci95);
  j["geomean_speedup_correct_and_faster"] = m.measured ? optional_json(m.geomean_correct_and_faster) : nullptr;
  j["geomean_speedup_correct_and_faster_ci95"] = interval(m.geomean_correct_and_faster_ci95);
  return j;
}

nlohmann::ordered_json memory_json(const MemoryMetrics& m) {
  nlohmann::ordered_json j;
  j["measured"] = m.measured;
  j["slots"] = m.slots;
  j["correct"] = m.correct;
  j["measured_correct"] = m.measured_correct;
  j["correct_mem_efficiency"] = m.measured ? optional_json(m.efficiency) : nullptr;
  j["mem_efficient_share"] = m.measured ? nlohmann::ordered_json(m.efficient_share) : nullptr;
  j["mem_increased_share"] = optional_json(m.increased_share);
  return j;
}

nlohmann::ordered_json gate_json(const GateSummary& g) {
  nlohmann::ordered_json j;
  j["available"] = g.available;
  if (!g.available) return j;
  j["correct"] = g.correct;
  j["correct_rate"] = g.correct_rate;
  for (const auto& [b, m] : g.speed) j["speed"][b] = speed_json(m);
  j["memory"] = memory_json(g.memory);
  j["pass_at_k"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : g.pass_at_k) j["pass_at_k"][std::to_string(k)] = v;
  nlohmann::ordered_json best;
  best["correct"] = g.best_correct;
  best["correct_rate"] = g.best_correct_rate;
  for (const auto& [b, m] : g.best_speed) best["speed"][b] = speed_json(m);
  best["memory"] = memory_json(g.best_memory);
  j["best_of_n"] = best;
  return j;
}

nlohmann::ordered_json sample_json(const SampleView& v) {
  nlohmann::ordered_json j;
  j["level"] = v.level;
  j["problem_id"] = v.problem_id;
  j["problem"] = v.problem;
  j["sample_id"] = v.sample_id;
  j["present"] = v.present;
  j["compiled"] = v.compiled;
  j["verdict"] = v.verdict;
  j["standard"] = optional_json(v.standard);
  j["hidden"] = optional_json(v.hidden);
  j["standard_incomplete"] = v.standard_incomplete;
  j["speedup"] = v.speedup;
  j["speedup_ci95"] = nlohmann::ordered_json::object();
  for (const auto& [b, ci] : v.speedup_ci95) j["speedup_ci95"][b] = {ci.first, ci.second};
  j["speedup_call"] = nlohmann::ordered_json::object();
  for (const auto& [b, c] : v.calls) j["speedup_call"][b] = speedup_call_name(c);
  j["timing_warnings"] = v.timing_warnings;
  j["memory_ratio"] = v.memory_ratio;
  if (!v.memory_note.empty()) j["memory_note"] = v.memory_note;
  j["speed_of_light"] = optional_json(v.speed_of_light);
  j["runtime_ms"] = optional_json(v.runtime_ms);
  j["failed_distributions"] = v.failed_distributions;
  j["cheats"] = v.cheats;
  j["reason"] = v.reason;
  return j;
}

nlohmann::ordered_json verified_json(const VerifiedTable& t) {
  auto opt = [](const std::optional<double>& x) { return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr); };
  nlohmann::ordered_json j;
  j["baseline"] = t.baseline;
  j["gate"] = t.gate;
  j["scopes"] = nlohmann::ordered_json::array();
  for (const auto& s : t.scopes) {
    nlohmann::ordered_json f = nlohmann::ordered_json::object();
    for (size_t i = 0; i < kFastPThresholds.size(); ++i) f[fmt::format("{:g}", kFastPThresholds[i])] = s.fast_p[i];
    j["scopes"].push_back({{"name", s.name},
                           {"level", s.level},
                           {"problems", s.problems},
                           {"correct", s.winners},
                           {"correct_untimed", s.correct_untimed},
                           {"correctness", s.correctness},
                           {"speedup", opt(s.speedup)},
                           {"fast_p", f},
                           {"memory_measured", s.memory_measured},
                           {"mem_eff", opt(s.mem_eff)},
                           {"mem_efficient_share", s.mem_efficient_share}});
  }
  return j;
}

}  // namespace

std::string render_markdown(const ReportInput& input) {
  std::string out = "# kbv report\n\n";
  out += fmt::format(
      "Speedups against the **{}** baseline (baseline time / candidate time) unless a column names "
      "another; definitions in docs/METRICS.md.\n",
      input.baseline);
  for (const auto& n : input.notes) out += "- " + md_escape(n) + "\n";
  out += "\n";
  for (const auto& run : input.runs)
    if (!run.timing_notice.empty())
      out += fmt::format("> **Warning ({}):** {}\n\n", md_escape(run.name), md_escape(run.timing_notice));
  if (input.verified_tables) {
    out += "## KernelBench-Verified tables\n\n";
    out += fmt::format("Best-of-n per problem against the **{}** baseline, as KernelBench-Verified's scoring code "
                       "computes them (docs/METRICS.md, \"The verified table\").\n\n",
                       input.baseline);
    for (const Table& t : {verified_speed_table(input), verified_memory_table(input), verified_overall_table(input)}) {
      out += "### " + t.title + "\n\n";
      md_table(out, t);
    }
  }
  if (input.runs.size() > 1) {
    out += "## Leaderboard\n\n";
    md_table(out, leaderboard_table(input));
    Table gates = gates_table(input);
    out += "### " + gates.title + "\n\n";
    md_table(out, gates);
  }
  if (Table t = precision_table(input); !t.rows.empty()) {
    out += "## " + t.title + "\n\n";
    md_table(out, t);
  }
  for (size_t i = 0; i < input.runs.size(); ++i) {
    const RunSummary& run = input.runs[i];
    out += fmt::format("## {}\n\nprotocol `{}` · device {}\n\n", md_escape(run.name), run.protocol,
                       run.device.empty() ? "not recorded" : md_escape(run.device));
    // Several runs: said again in the run's own section (one run: the top says it).
    if (!run.timing_notice.empty() && input.runs.size() > 1) out += "- **" + md_escape(run.timing_notice) + "**\n";
    for (const auto& n : run.notes) out += "- " + md_escape(n) + "\n";
    for (const auto& [b, label] : run.baseline_labels)
      out += "- baseline " + md_escape(b) + " measured: " + md_escape(label) + "\n";
    out += "\n";
    if (Table t = excluded_table(run, i); !t.rows.empty()) {
      out += "### " + t.title + "\n\n";
      md_table(out, t);
    }
    if (run.scopes.empty()) {
      out += "No records.\n\n";
      continue;
    }
    out += "### Summary\n\n";
    md_table(out, summary_table(run, i));
    Table survival = survival_table(run, run.scopes.back(), i);
    out += "### " + survival.title + "\n\n";
    md_table(out, survival);
    out += "### Verdicts\n\n";
    md_table(out, verdict_table(run, i));
    out += "### Per problem\n\n";
    md_table(out, samples_table(run, i), 160);
  }
  return out;
}

std::string render_csv(const ReportInput& input) {
  std::vector<std::string> baselines = {"tf32", "fp32", "compile"};
  for (const auto& run : input.runs)
    for (const auto& b : run.baselines_seen)
      if (std::find(baselines.begin(), baselines.end(), b) == baselines.end()) baselines.push_back(b);
  std::vector<std::string> header = {"run",       "protocol", "level",    "problem_id", "problem",
                                     "sample_id", "verdict",  "compiled", "standard",   "hidden"};
  for (const auto& b : baselines) header.push_back("speedup_" + b);
  for (const auto& b : baselines) header.push_back("memory_ratio_" + b);
  for (const char* h : {"speed_of_light", "runtime_ms", "failed_distributions", "cheats", "reason"})
    header.push_back(h);
  // Added after `reason` so that older readers' column positions hold.
  for (const auto& b : baselines) {
    header.push_back("speedup_ci95_low_" + b);
    header.push_back("speedup_ci95_high_" + b);
    header.push_back("speedup_call_" + b);
  }
  header.push_back("timing_warnings");
  std::string out = fmt::format("{}\n", fmt::join(header, ","));
  auto tri = [](const std::optional<bool>& b) { return b ? (*b ? "true" : "false") : ""; };
  auto num = [](const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : fmt::format("{:.6g}", it->second);
  };
  for (const auto& run : input.runs)
    for (const auto& v : run.samples) {
      std::vector<std::string> f = {csv_field(run.name),
                                    csv_field(run.protocol),
                                    std::to_string(v.level),
                                    std::to_string(v.problem_id),
                                    csv_field(v.problem),
                                    std::to_string(v.sample_id),
                                    v.verdict,
                                    v.present ? (v.compiled ? "true" : "false") : "",
                                    tri(v.standard),
                                    tri(v.hidden)};
      for (const auto& b : baselines) f.push_back(num(v.speedup, b));
      for (const auto& b : baselines) f.push_back(num(v.memory_ratio, b));
      f.push_back(v.speed_of_light ? fmt::format("{:.6g}", *v.speed_of_light) : "");
      f.push_back(v.runtime_ms ? fmt::format("{:.6g}", *v.runtime_ms) : "");
      f.push_back(csv_field(fmt::format("{}", fmt::join(v.failed_distributions, " "))));
      f.push_back(csv_field(fmt::format("{}", fmt::join(v.cheats, "; "))));
      f.push_back(csv_field(v.reason));
      for (const auto& b : baselines) {
        auto ci = v.speedup_ci95.find(b);
        f.push_back(ci == v.speedup_ci95.end() ? "" : fmt::format("{:.6g}", ci->second.first));
        f.push_back(ci == v.speedup_ci95.end() ? "" : fmt::format("{:.6g}", ci->second.second));
        auto call = v.calls.find(b);
        f.push_back(call == v.calls.end() ? "" : csv_field(speedup_call_name(call->second)));
      }
      f.push_back(csv_field(fmt::format("{}", fmt::join(v.timing_warnings, "; "))));
      out += fmt::format("{}\n", fmt::join(f, ","));
    }
  // A problem out of the denominator: one row, verdict "excluded", no sample id, the reason.
  for (const auto& run : input.runs)
    for (const auto& e : run.excluded) {
      std::vector<std::string> f = {csv_field(run.name), csv_field(run.protocol), std::to_string(e.level),
                                    std::to_string(e.id), csv_field(e.name), "", "excluded", "", "", ""};
      f.resize(f.size() + 2 * baselines.size() + 4, "");
      f.push_back(csv_field(e.kind + ": " + e.reason + " (" + e.source + ")"));
      f.resize(header.size(), "");
      out += fmt::format("{}\n", fmt::join(f, ","));
    }
  return out;
}

nlohmann::ordered_json render_json(const ReportInput& input) {
  nlohmann::ordered_json j;
  j["kbv_version"] = KBV_VERSION;
  j["baseline"] = input.baseline;
  j["fast_p_thresholds"] = kFastPThresholds;
  j["notes"] = input.notes;
  j["runs"] = nlohmann::ordered_json::array();
  for (const auto& run : input.runs) {
    nlohmann::ordered_json r;
    r["name"] = run.name;
    r["protocol"] = run.protocol;
    r["precision"] = run.precision;
    r["device"] = run.device;
    r["baseline"] = run.baseline;
    r["baselines_seen"] = run.baselines_seen;
    r["notes"] = run.notes;
    r["baseline_labels"] = run.baseline_labels;
    r["excluded"] = nlohmann::ordered_json::array();
    for (const auto& e : run.excluded)
      r["excluded"].push_back({{"level", e.level},
                               {"id", e.id},
                               {"name", e.name},
                               {"kind", e.kind},
                               {"reason", e.reason},
                               {"source", e.source}});
    r["excluded_records"] = run.excluded_records;
    if (input.verified_tables) r["verified"] = verified_json(verified_table(run));
    r["fast_p_definition"] = fast_p_mode_name(run.fast_p_mode);
    r["timing_notice"] = run.timing_notice.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(run.timing_notice);
    // What `kbv generate` recorded in the folder; null when it recorded nothing (or not that).
    const GenerationSummary& g = run.generation;
    r["generation"] = g.records == 0 ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json{
                                           {"records", g.records},
                                           {"models", g.models},
                                           {"prompt_tokens", g.with_tokens ? nlohmann::ordered_json(g.prompt_tokens) : nullptr},
                                           {"completion_tokens",
                                            g.with_tokens ? nlohmann::ordered_json(g.completion_tokens) : nullptr},
                                           {"records_with_tokens", g.with_tokens},
                                           {"cost_usd", g.with_cost ? nlohmann::ordered_json(g.cost_usd) : nullptr},
                                           {"records_with_cost", g.with_cost}};
    r["scopes"] = nlohmann::ordered_json::array();
    for (const auto& s : run.scopes) {
      nlohmann::ordered_json sj;
      sj["name"] = s.name;
      sj["level"] = s.level;
      sj["problems"] = s.problems;
      sj["samples_per_problem"] = s.samples_per_problem ? nlohmann::ordered_json(s.samples_per_problem) : nullptr;
      sj["slots"] = s.slots;
      sj["records"] = s.records;
      sj["missing"] = s.missing;
      sj["compiled"] = s.compiled;
      sj["compile_rate"] = s.compile_rate;
      sj["standard_incomplete"] = s.standard_incomplete;
      sj["headline_gate"] = headline_gate(s) == Gate::hidden ? "hidden" : "standard";
      sj["standard"] = gate_json(s.standard);
      sj["hidden"] = gate_json(s.hidden);
      sj["verdicts"] = s.verdicts;
      sj["failed_distributions"] = s.failed_distributions;
      sj["cheats"] = s.cheats;
      sj["timed"] = s.timed;
      sj["timing_warned"] = s.timing_warned;
      sj["timing_warnings"] = s.timing_warnings;
      r["scopes"].push_back(std::move(sj));
    }
    r["samples"] = nlohmann::ordered_json::array();
    for (const auto& v : run.samples) r["samples"].push_back(sample_json(v));
    j["runs"].push_back(std::move(r));
  }
  return j;
}

}  // namespace kbv
