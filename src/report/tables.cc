// The report's tables, built once and rendered as Markdown or HTML.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "record/trust.h"
#include "report/render.h"

namespace kbv {
namespace {

const char* kNotMeasured = "not measured";
const char* kNotRun = "not run";

Cell rate_cell(double rate, int count, int total) { return number_cell(format_count_rate(count, total), rate); }

const GateSummary& gate_of(const ScopeSummary& s, Gate g) { return g == Gate::standard ? s.standard : s.hidden; }

std::string gate_label(Gate g) { return g == Gate::hidden ? "hidden distributions" : "standard check"; }

// A speedup aggregate: "1.43× [1.20, 1.70]" (its 95% interval), "none (0 correct)", or "not measured".
Cell speed_cell(const SpeedMetrics& m, const std::optional<double>& value,
                const std::optional<Interval>& ci = std::nullopt) {
  if (!m.measured) return text_cell(kNotMeasured, "na");
  if (!value) return text_cell(m.correct == 0 ? "none (0 correct)" : "none", "na");
  const std::string tone = ci && ci->first <= 1.0 && ci->second >= 1.0 ? "" : *value >= 1.0 ? "good" : "bad";
  return number_cell(format_speedup_ci(*value, ci), *value, tone);
}

// fast_p at threshold i; under the interval definition, with the correct samples whose interval
// straddles the threshold ("52.0% · 3 uncertain").
Cell fast_cell(const SpeedMetrics& m, size_t i) {
  if (!m.measured) return text_cell(kNotMeasured, "na");
  return number_cell(format_fast_p(m, i), m.fast_p[i]);
}

Cell memory_efficiency_cell(const MemoryMetrics& m) {
  if (!m.measured) return text_cell(kNotMeasured, "na");
  if (!m.efficiency) return text_cell(m.correct == 0 ? "none (0 correct)" : "none", "na");
  return number_cell(format_speedup(*m.efficiency), *m.efficiency, *m.efficiency >= 1.0 ? "good" : "bad");
}

Cell memory_share_cell(const MemoryMetrics& m) {
  if (!m.measured) return text_cell(kNotMeasured, "na");
  return number_cell(format_rate(m.efficient_share), m.efficient_share);
}

Cell memory_increased_cell(const MemoryMetrics& m) {
  if (!m.measured || !m.increased_share) return text_cell(kNotMeasured, "na");
  return number_cell(format_rate(*m.increased_share), *m.increased_share);
}

std::string threshold(double p) { return fmt::format("{:g}", p); }

const SpeedMetrics& speed_of(const std::map<std::string, SpeedMetrics>& m, const std::string& b) {
  static const SpeedMetrics none;
  auto it = m.find(b);
  return it == m.end() ? none : it->second;
}

std::string scope_header(const ScopeSummary& s) { return s.level ? fmt::format("level {}", s.level) : "all levels"; }

// The model the samples came from: `kbv generate`'s records say it; without them, the folder's name.
Cell model_cell(const RunSummary& run) {
  const GenerationSummary& g = run.generation;
  if (g.models.empty()) return text_cell(run.name, g.records ? "na" : "");
  return text_cell(fmt::format("{}", fmt::join(g.models, ", ")));
}

std::string tokens_text(long long n) {
  if (n >= 10'000'000) return fmt::format("{:.0f}M", static_cast<double>(n) / 1e6);
  if (n >= 10'000) return fmt::format("{:.0f}k", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

Cell tokens_cell(const GenerationSummary& g) {
  if (g.records == 0) return text_cell("no generate records", "na");
  if (g.with_tokens == 0) return text_cell("not reported", "na");
  std::string s = fmt::format("{} + {}", tokens_text(g.prompt_tokens), tokens_text(g.completion_tokens));
  if (g.with_tokens < g.records) s += fmt::format(" ({} of {} records)", g.with_tokens, g.records);
  return number_cell(s, static_cast<double>(g.prompt_tokens + g.completion_tokens));
}

Cell cost_cell(const GenerationSummary& g) {
  if (g.records == 0) return text_cell("no generate records", "na");
  if (g.with_cost == 0) return text_cell("not reported", "na");
  std::string s = fmt::format("${:.2f}", g.cost_usd);
  if (g.with_cost < g.records) s += fmt::format(" ({} of {} records)", g.with_cost, g.records);
  return number_cell(s, g.cost_usd);
}

}  // namespace

std::string format_rate(double rate) { return fmt::format("{:.1f}%", rate * 100.0); }

std::string format_speedup(double x) {
  if (x >= 100) return fmt::format("{:.0f}×", x);
  if (x >= 10) return fmt::format("{:.1f}×", x);
  return fmt::format("{:.2f}×", x);
}

std::string format_fast_p(const SpeedMetrics& m, size_t i) {
  std::string s = format_rate(m.fast_p[i]);
  if (m.mode == FastPMode::interval && m.fast_p_uncertain[i] > 0)
    s += fmt::format(" · {} uncertain", m.fast_p_uncertain[i]);
  return s;
}

std::string format_speedup_ci(double x, const std::optional<Interval>& ci) {
  std::string s = format_speedup(x);
  if (!ci) return s;
  auto end = [](double v) {  // the precision format_speedup gives, without the sign
    std::string e = format_speedup(v);
    return e.substr(0, e.size() - std::string("×").size());
  };
  return s + " [" + end(ci->first) + ", " + end(ci->second) + "]";
}

Cell speedup_cell(const SampleView& v, const std::string& baseline) {
  auto it = v.speedup.find(baseline);
  if (it == v.speedup.end()) return text_cell("");
  std::optional<Interval> ci;
  if (auto c = v.speedup_ci95.find(baseline); c != v.speedup_ci95.end()) ci = c->second;
  std::string s = format_speedup_ci(it->second, ci);
  auto call = v.calls.find(baseline);
  const SpeedupCall c = call == v.calls.end() ? SpeedupCall::unknown : call->second;
  if (ci && c == SpeedupCall::no_difference) return number_cell(s + " " + speedup_call_name(c), it->second);
  return number_cell(s, it->second, it->second >= 1 ? "good" : "bad");
}

std::string timing_warnings_text(const ScopeSummary& s) {
  if (s.timed == 0) return "no timed samples";
  std::string out = fmt::format("{} of {}", s.timing_warned, s.timed);
  std::vector<std::string> parts;
  for (const auto& label : timing_warning_label_order())
    if (auto it = s.timing_warnings.find(label); it != s.timing_warnings.end())
      parts.push_back(fmt::format("{} {}", label, it->second));
  for (const auto& [label, n] : s.timing_warnings)  // a label of a newer kbv
    if (std::find(timing_warning_label_order().begin(), timing_warning_label_order().end(), label) ==
        timing_warning_label_order().end())
      parts.push_back(fmt::format("{} {}", label, n));
  if (!parts.empty()) out += fmt::format(" ({})", fmt::join(parts, ", "));
  return out;
}

std::string format_count_rate(int count, int total) {
  return fmt::format("{} ({}/{})", format_rate(total ? static_cast<double>(count) / total : 0.0), count, total);
}

Gate headline_gate(const ScopeSummary& scope) { return scope.hidden.available ? Gate::hidden : Gate::standard; }

Table leaderboard_table(const ReportInput& input) {
  Table t;
  t.id = "leaderboard";
  t.title = "Leaderboard";
  t.sortable = true;
  const std::string b = input.baseline;
  t.header = {"run",
              "model",
              "protocol",
              "device",
              "problems",
              "samples",
              "compiled",
              "correct (standard)",
              "correct (hidden)",
              "fast_1 (" + b + ")",
              "geomean (" + b + ")",
              "best-of-n correct",
              "Correct Speedup",
              "best-of-n fast_1",
              "Correct Mem Eff",
              "Mem Efficient %",
              "tokens (prompt + completion)",
              "cost"};
  for (const auto& run : input.runs) {
    if (run.scopes.empty()) {
      t.rows.push_back({text_cell(run.name), model_cell(run), text_cell(run.protocol), text_cell(run.device),
                        text_cell("no records", "na")});
      t.rows.back().resize(t.header.size() - 2, text_cell(""));
      t.rows.back().push_back(tokens_cell(run.generation));
      t.rows.back().push_back(cost_cell(run.generation));
      continue;
    }
    const ScopeSummary& s = run.scopes.back();
    Gate g = headline_gate(s);
    const GateSummary& gs = gate_of(s, g);
    const SpeedMetrics& per_slot = speed_of(gs.speed, b);
    const SpeedMetrics& best = speed_of(gs.best_speed, b);
    std::vector<Cell> row = {
        text_cell(run.name),
        model_cell(run),
        text_cell(run.protocol + (run.precision == "fp32" ? "" : " " + run.precision)),
        text_cell(run.device.empty() ? "?" : run.device),
        number_cell(std::to_string(s.problems), s.problems),
        number_cell(s.samples_per_problem ? std::to_string(s.samples_per_problem) : "varies", s.samples_per_problem),
        rate_cell(s.compile_rate, s.compiled, s.slots),
        s.standard.available ? rate_cell(s.standard.correct_rate, s.standard.correct, s.slots) : text_cell(kNotRun, "na"),
        s.hidden.available ? rate_cell(s.hidden.correct_rate, s.hidden.correct, s.slots) : text_cell(kNotRun, "na"),
        fast_cell(per_slot, kFast1),
        speed_cell(per_slot, per_slot.geomean_correct, per_slot.geomean_correct_ci95),
        rate_cell(gs.best_correct_rate, gs.best_correct, s.problems),
        speed_cell(best, best.geomean_correct, best.geomean_correct_ci95),
        fast_cell(best, kFast1),
        memory_efficiency_cell(gs.best_memory),
        memory_share_cell(gs.best_memory),
        tokens_cell(run.generation),
        cost_cell(run.generation)};
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table gates_table(const ReportInput& input) {
  Table t;
  t.id = "gates";
  t.title = "fast_1 and geomean speedup by baseline and correctness gate";
  t.sortable = true;
  t.header = {"run"};
  const std::pair<const char*, const char*> baselines[] = {{"tf32", "TF32"}, {"fp32", "FP32"}};
  const std::pair<Gate, const char*> gates[] = {{Gate::standard, "standard"}, {Gate::hidden, "hidden"}};
  for (const auto& [b, B] : baselines)
    for (const auto& [g, G] : gates) {
      t.header.push_back(fmt::format("fast_1 ({}, {})", B, G));
      t.header.push_back(fmt::format("geomean ({}, {})", B, G));
    }
  for (const auto& run : input.runs) {
    std::vector<Cell> row = {text_cell(run.name)};
    for (const auto& [b, B] : baselines)
      for (const auto& [g, G] : gates) {
        if (run.scopes.empty() || !gate_of(run.scopes.back(), g).available) {
          row.push_back(text_cell(kNotRun, "na"));
          row.push_back(text_cell(kNotRun, "na"));
          continue;
        }
        const SpeedMetrics& m = speed_of(gate_of(run.scopes.back(), g).speed, b);
        row.push_back(fast_cell(m, kFast1));
        row.push_back(speed_cell(m, m.geomean_correct));
      }
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table summary_table(const RunSummary& run, size_t index) {
  Table t;
  t.id = fmt::format("summary-{}", index);
  t.title = "Summary";
  t.header = {"metric"};
  for (const auto& s : run.scopes) t.header.push_back(scope_header(s));
  auto row = [&](std::string name, auto&& cell_of) {
    std::vector<Cell> r = {text_cell(std::move(name))};
    for (const auto& s : run.scopes) r.push_back(cell_of(s));
    t.rows.push_back(std::move(r));
  };
  const std::string& b = run.baseline;
  row("problems (denominator)", [](const ScopeSummary& s) { return number_cell(std::to_string(s.problems), s.problems); });
  row("samples per problem", [](const ScopeSummary& s) {
    return s.samples_per_problem ? number_cell(std::to_string(s.samples_per_problem), s.samples_per_problem)
                                 : text_cell("varies");
  });
  row("slots without a sample", [](const ScopeSummary& s) { return number_cell(std::to_string(s.missing), s.missing); });
  row("compiled", [](const ScopeSummary& s) { return rate_cell(s.compile_rate, s.compiled, s.slots); });
  for (Gate g : {Gate::standard, Gate::hidden})
    row("correct, " + gate_label(g), [g](const ScopeSummary& s) {
      const GateSummary& gs = gate_of(s, g);
      return gs.available ? rate_cell(gs.correct_rate, gs.correct, s.slots) : text_cell(kNotRun, "na");
    });
  bool incomplete = std::any_of(run.scopes.begin(), run.scopes.end(),
                                [](const ScopeSummary& s) { return s.standard_incomplete > 0; });
  if (incomplete)
    row("standard check cut short by a failure on D2-D4",
        [](const ScopeSummary& s) { return number_cell(std::to_string(s.standard_incomplete), s.standard_incomplete); });

  // The headline gate per scope (hidden when run) names itself in each row.
  for (size_t i = 0; i < kFastPThresholds.size(); ++i)
    row("fast_" + threshold(kFastPThresholds[i]) + " (" + b + ")",
        [&, i](const ScopeSummary& s) { return fast_cell(speed_of(gate_of(s, headline_gate(s)).speed, b), i); });
  row("geomean speedup, correct (" + b + ")", [&](const ScopeSummary& s) {
    const auto& m = speed_of(gate_of(s, headline_gate(s)).speed, b);
    return speed_cell(m, m.geomean_correct, m.geomean_correct_ci95);
  });
  row("geomean speedup, correct and faster (" + b + ")", [&](const ScopeSummary& s) {
    const auto& m = speed_of(gate_of(s, headline_gate(s)).speed, b);
    return speed_cell(m, m.geomean_correct_and_faster, m.geomean_correct_and_faster_ci95);
  });
  row("timed correct samples without an interval (point estimate) (" + b + ")", [&](const ScopeSummary& s) {
    const auto& m = speed_of(gate_of(s, headline_gate(s)).speed, b);
    return number_cell(std::to_string(m.timed_without_interval), m.timed_without_interval);
  });
  row("timed samples with a timing warning", [](const ScopeSummary& s) {
    return number_cell(timing_warnings_text(s), s.timing_warned, 2 * s.timing_warned > s.timed ? "bad" : "");
  });
  row("correct but not timed (" + b + ")", [&](const ScopeSummary& s) {
    const auto& m = speed_of(gate_of(s, headline_gate(s)).speed, b);
    int n = m.correct - m.timed;
    return number_cell(std::to_string(n), n, n ? "bad" : "");
  });
  std::vector<int> ks;
  for (const auto& s : run.scopes)
    for (const auto& [k, v] : gate_of(s, headline_gate(s)).pass_at_k)
      if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  std::sort(ks.begin(), ks.end());
  for (int k : ks)
    row(fmt::format("pass@{}", k), [k](const ScopeSummary& s) {
      const auto& p = gate_of(s, headline_gate(s)).pass_at_k;
      auto it = p.find(k);
      return it == p.end() ? text_cell("n/a (fewer samples)", "na") : number_cell(format_rate(it->second), it->second);
    });
  row("best-of-n: problems correct", [](const ScopeSummary& s) {
    const GateSummary& gs = gate_of(s, headline_gate(s));
    return rate_cell(gs.best_correct_rate, gs.best_correct, s.problems);
  });
  row("best-of-n: Correct Speedup (" + b + ")", [&](const ScopeSummary& s) {
    const auto& m = speed_of(gate_of(s, headline_gate(s)).best_speed, b);
    return speed_cell(m, m.geomean_correct, m.geomean_correct_ci95);
  });
  row("best-of-n: fast_1 (" + b + ")",
      [&](const ScopeSummary& s) { return fast_cell(speed_of(gate_of(s, headline_gate(s)).best_speed, b), kFast1); });
  row("best-of-n: Correct Mem Efficiency (" + b + ")",
      [](const ScopeSummary& s) { return memory_efficiency_cell(gate_of(s, headline_gate(s)).best_memory); });
  row("best-of-n: Mem Efficient % (" + b + ")",
      [](const ScopeSummary& s) { return memory_share_cell(gate_of(s, headline_gate(s)).best_memory); });
  row("best-of-n: correct kernels increasing peak memory (" + b + ")",
      [](const ScopeSummary& s) { return memory_increased_cell(gate_of(s, headline_gate(s)).best_memory); });
  row("gate of the rows above", [](const ScopeSummary& s) { return text_cell(gate_label(headline_gate(s))); });
  return t;
}

Table survival_table(const RunSummary& run, const ScopeSummary& s, size_t index) {
  Table t;
  t.id = fmt::format("survival-{}", index);
  t.title = fmt::format("How much of the speedup survives ({}, best-of-n per problem)", scope_header(s));
  t.header = {"baseline", "standard check", "hidden distributions"};
  for (const char* b : {"fp32", "tf32"}) {
    auto label = run.baseline_labels.find(b);  // what the baseline measured (an upstream file says)
    std::vector<Cell> r = {text_cell(label != run.baseline_labels.end() ? label->second : native_baseline_label(b))};
    for (Gate g : {Gate::standard, Gate::hidden}) {
      const GateSummary& gs = gate_of(s, g);
      if (!gs.available) {
        r.push_back(text_cell(kNotRun, "na"));
        continue;
      }
      const SpeedMetrics& m = speed_of(gs.best_speed, b);
      if (!m.measured) {
        r.push_back(text_cell(kNotMeasured, "na"));
        continue;
      }
      std::string geo = m.geomean_correct ? format_speedup_ci(*m.geomean_correct, m.geomean_correct_ci95) : "none";
      r.push_back(number_cell(fmt::format("{} · fast_1 {}", geo, format_rate(m.fast_p[kFast1])),
                              m.geomean_correct.value_or(0),
                              m.geomean_correct && *m.geomean_correct >= 1 ? "good" : "bad"));
    }
    t.rows.push_back(std::move(r));
  }
  return t;
}

Table verdict_table(const RunSummary& run, size_t index) {
  Table t;
  t.id = fmt::format("verdicts-{}", index);
  t.title = "Verdicts";
  t.header = {"outcome"};
  for (const auto& s : run.scopes) t.header.push_back(scope_header(s));
  std::vector<std::string> verdicts = {"correct", "wrong_output", "flaky",         "rejected", "compile_error",
                                       "runtime_error", "timeout", "crashed", "problem_error", "missing"};
  for (const auto& s : run.scopes)
    for (const auto& [v, n] : s.verdicts)
      if (std::find(verdicts.begin(), verdicts.end(), v) == verdicts.end()) verdicts.push_back(v);
  auto add = [&](const std::string& label, auto&& count_of) {
    bool any = false;
    std::vector<Cell> r = {text_cell(label)};
    for (const auto& s : run.scopes) {
      int n = count_of(s);
      any = any || n > 0;
      r.push_back(number_cell(format_count_rate(n, s.slots), n));
    }
    if (any) t.rows.push_back(std::move(r));
  };
  for (const auto& v : verdicts)
    add(v, [&](const ScopeSummary& s) {
      auto it = s.verdicts.find(v);
      return it == s.verdicts.end() ? 0 : it->second;
    });
  std::vector<std::string> dists, cheats;
  for (const auto& s : run.scopes) {
    for (const auto& [d, n] : s.failed_distributions)
      if (std::find(dists.begin(), dists.end(), d) == dists.end()) dists.push_back(d);
    for (const auto& [c, n] : s.cheats)
      if (std::find(cheats.begin(), cheats.end(), c) == cheats.end()) cheats.push_back(c);
  }
  std::sort(dists.begin(), dists.end());
  std::sort(cheats.begin(), cheats.end());
  for (const auto& d : dists)
    add("failed on " + d, [&](const ScopeSummary& s) {
      auto it = s.failed_distributions.find(d);
      return it == s.failed_distributions.end() ? 0 : it->second;
    });
  for (const auto& c : cheats)
    add("cheat " + c, [&](const ScopeSummary& s) {
      auto it = s.cheats.find(c);
      return it == s.cheats.end() ? 0 : it->second;
    });
  return t;
}

Table samples_table(const RunSummary& run, size_t index) {
  Table t;
  t.id = fmt::format("samples-{}", index);
  t.title = "Per problem";
  t.sortable = true;
  t.header = {"level", "problem", "sample", "verdict", "standard", "hidden"};
  std::vector<std::string> baselines = {"tf32", "fp32"};
  for (const auto& b : run.baselines_seen)
    if (std::find(baselines.begin(), baselines.end(), b) == baselines.end()) baselines.push_back(b);
  for (const auto& b : baselines) t.header.push_back("× " + b);
  t.header.push_back("memory (" + run.baseline + ")");
  t.header.push_back("speed of light");
  t.header.push_back("timing warnings");
  t.header.push_back("reason");
  auto gate_cell = [](const std::optional<bool>& g, bool present) {
    if (!present) return text_cell("—", "na");
    if (!g) return text_cell(kNotRun, "na");
    return *g ? number_cell("pass", 1, "good") : number_cell("fail", 0, "bad");
  };
  for (const auto& v : run.samples) {
    // A sample that passed a check should have been measured; say "not measured" for those only.
    const bool passed_any = v.passes(Gate::standard) || v.passes(Gate::hidden);
    std::vector<Cell> r = {
        number_cell(std::to_string(v.level), v.level),
        Cell{v.problem.empty() ? std::to_string(v.problem_id) : v.problem, static_cast<double>(v.problem_id), "", true},
        number_cell(std::to_string(v.sample_id), v.sample_id),
        text_cell(v.verdict, v.verdict == "correct" ? "good" : "bad"),
        gate_cell(v.standard, v.present),
        gate_cell(v.hidden, v.present)};
    for (const auto& b : baselines) {
      if (v.speedup.count(b))
        r.push_back(speedup_cell(v, b));
      else
        r.push_back(passed_any ? text_cell(kNotMeasured, "na") : text_cell("—", "na"));
    }
    auto m = v.memory_ratio.find(run.baseline);
    if (m != v.memory_ratio.end())
      r.push_back(number_cell(format_speedup(m->second), m->second, m->second >= 1 ? "good" : "bad"));
    else
      r.push_back(
          passed_any
              ? text_cell(v.memory_note.empty() ? kNotMeasured : std::string(kNotMeasured) + ": " + v.memory_note, "na")
              : text_cell("—", "na"));
    if (v.speed_of_light)
      r.push_back(number_cell(format_rate(*v.speed_of_light), *v.speed_of_light));
    else
      r.push_back(passed_any ? text_cell(kNotMeasured, "na") : text_cell("—", "na"));
    r.push_back(v.timing_warnings.empty() ? text_cell("")
                                          : text_cell(fmt::format("{}", fmt::join(v.timing_warnings, ", ")), "bad"));
    std::string reason = v.reason;
    if (!v.failed_distributions.empty() && v.verdict != "correct" &&
        reason.find(v.failed_distributions.front()) == std::string::npos)
      reason = fmt::format("[failed {}] {}", fmt::join(v.failed_distributions, ","), reason);
    if (!v.cheats.empty()) reason = fmt::format("[{}] {}", fmt::join(v.cheats, ", "), reason);
    r.push_back(text_cell(reason));
    t.rows.push_back(std::move(r));
  }
  return t;
}

}  // namespace kbv
