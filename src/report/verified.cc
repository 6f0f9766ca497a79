// KernelBench-Verified's denominator and table shape (docs/METRICS.md, "The verified table").
#include "report/verified.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/summary.h"

namespace kbv {
using nlohmann::json;

bool is_verified_protocol(const std::string& protocol_name) { return protocol_name == kVerifiedProtocolName; }

std::vector<Exclusion> verified_protocol_exclusions() {
  const char* why =
      "the reference output is constant zero for any input: a kernel returning zeros passes every distribution "
      "(KernelBench-Verified excludes it by hand: generate_leaderboard.py EXCLUDED_PIDS)";
  std::vector<Exclusion> out;
  for (int id : {23, 80, 83}) out.push_back({2, id, "", "degenerate", why, std::string("protocol ") + kVerifiedProtocolName});
  return out;
}

namespace {

bool unsolvable_rule(const std::string& rule) {
  static const std::set<std::string> rules = {"ill_conditioned", "nonfinite",     "nondeterministic",
                                              "dropout",         "problem_error", "output_count"};
  return rules.count(rule) > 0;
}

std::string string_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<Exclusion> exclusions_from_lint(const json& report, const std::string& source, std::string& error) {
  if (!report.is_object() || !report.contains("problems") || !report["problems"].is_array()) {
    error = fmt::format("{}: not a `kbv lint-problems --json` report (expected an object with a \"problems\" array)",
                        source);
    return {};
  }
  std::vector<std::string> ran;  // the distributions the lint ran
  if (auto it = report.find("distributions"); it != report.end() && it->is_array())
    for (const auto& d : *it)
      if (d.is_object() && d.contains("name") && d["name"].is_string()) ran.push_back(d["name"].get<std::string>());
  std::vector<Exclusion> out;
  size_t index = 0;
  for (const auto& row : report["problems"]) {
    ++index;
    if (!row.is_object() || !row.contains("level") || !row["level"].is_number_integer() || !row.contains("id") ||
        !row["id"].is_number_integer()) {
      error = fmt::format("{}: problems[{}]: expected an object with integer \"level\" and \"id\"", source, index - 1);
      return {};
    }
    const int level = row["level"].get<int>(), id = row["id"].get<int>();
    if (level <= 0 || id <= 0) continue;  // a file outside a levelN folder: nothing to key a report on
    const json findings = row.value("findings", json::array());
    if (!findings.is_array()) continue;
    std::optional<Exclusion> e;
    for (const auto& f : findings) {
      if (!f.is_object() || string_at(f, "severity") != "finding" || !string_at(f, "allowed").empty()) continue;
      const std::string rule = string_at(f, "rule");
      if (unsolvable_rule(rule)) {
        e = Exclusion{level, id, string_at(row, "name"), "unsolvable", rule + ": " + string_at(f, "message"), source};
        break;  // unsolvable says more than degenerate: it wins
      }
      if (rule == "constant" && !e) {
        std::set<std::string> where;
        if (auto d = f.find("distributions"); d != f.end() && d->is_array())
          for (const auto& x : *d)
            if (x.is_string()) where.insert(x.get<std::string>());
        bool everywhere = !ran.empty();
        for (const auto& r : ran) everywhere = everywhere && where.count(r);
        if (everywhere)
          e = Exclusion{level, id, string_at(row, "name"), "degenerate", rule + ": " + string_at(f, "message"), source};
      }
    }
    if (e) out.push_back(std::move(*e));
  }
  return out;
}

void merge_exclusions(std::vector<Exclusion>& list, const std::vector<Exclusion>& more) {
  for (const auto& e : more) {
    auto it = std::find_if(list.begin(), list.end(), [&](const Exclusion& x) { return x.level == e.level && x.id == e.id; });
    if (it == list.end()) {
      list.push_back(e);
    } else {
      if (it->name.empty()) it->name = e.name;
      if (it->source.find(e.source) == std::string::npos) it->source += "; " + e.source;
    }
  }
  std::sort(list.begin(), list.end(),
            [](const Exclusion& a, const Exclusion& b) { return std::pair(a.level, a.id) < std::pair(b.level, b.id); });
}

namespace {

// One problem's best-of-n under `gate`, as upstream's compute_best_of_n_metrics picks it.
struct Winner {
  bool found = false;
  bool correct_untimed = false;
  double speedup = 0;
  std::optional<double> memory_ratio;
};

Winner winner_of(const std::vector<const SampleView*>& samples, Gate gate, const std::string& baseline) {
  Winner w;
  for (const SampleView* v : samples) {  // in sample-id order: a tie keeps the first, as upstream's strict >
    if (!v->passes(gate)) continue;
    // upstream divides means: a record's mean ratio where it has one, else its speedup
    const auto& ratios = v->mean_speedup.count(baseline) ? v->mean_speedup : v->speedup;
    auto s = ratios.find(baseline);
    if (s == ratios.end()) {
      w.correct_untimed = true;
      continue;
    }
    if (!w.found || s->second > w.speedup) {
      w.found = true;
      w.speedup = s->second;
      auto m = v->memory_ratio.find(baseline);
      w.memory_ratio = m == v->memory_ratio.end() ? std::nullopt : std::optional<double>(m->second);
    }
  }
  if (w.found) w.correct_untimed = false;
  return w;
}

VerifiedScope scope_of(const std::string& name, int level, const std::vector<std::vector<const SampleView*>>& problems,
                       Gate gate, const std::string& baseline) {
  VerifiedScope s;
  s.name = name;
  s.level = level;
  s.problems = static_cast<int>(problems.size());
  std::vector<double> speedups, ratios;
  std::array<int, kFastPThresholds.size()> fast{};
  int efficient = 0;
  for (const auto& p : problems) {
    Winner w = winner_of(p, gate, baseline);
    if (w.correct_untimed) ++s.correct_untimed;
    if (!w.found) continue;
    ++s.winners;
    speedups.push_back(w.speedup);
    for (size_t i = 0; i < kFastPThresholds.size(); ++i) fast[i] += w.speedup > kFastPThresholds[i] ? 1 : 0;
    if (w.memory_ratio) {
      ratios.push_back(*w.memory_ratio);
      efficient += *w.memory_ratio > 1 ? 1 : 0;
    }
  }
  const double n = s.problems;
  if (s.problems > 0) {
    s.correctness = s.winners / n;
    for (size_t i = 0; i < fast.size(); ++i) s.fast_p[i] = fast[i] / n;
    s.mem_efficient_share = efficient / n;
  }
  s.fast_count = fast;
  s.mem_efficient = efficient;
  s.speedup = geomean(speedups);
  s.memory_measured = static_cast<int>(ratios.size());
  s.mem_eff = geomean(ratios);
  return s;
}

}  // namespace

VerifiedTable verified_table(const RunSummary& run) {
  VerifiedTable t;
  t.baseline = run.baseline;
  bool hidden = false;
  for (const auto& v : run.samples) hidden = hidden || v.hidden.has_value();
  const Gate gate = hidden ? Gate::hidden : Gate::standard;
  t.gate = hidden ? "hidden distributions" : "standard check";
  std::map<int, std::vector<std::vector<const SampleView*>>> levels;
  for (const auto& v : run.samples) {
    auto& groups = levels[v.level];
    if (groups.empty() || groups.back().front()->problem_id != v.problem_id) groups.emplace_back();
    groups.back().push_back(&v);
  }
  std::vector<std::vector<const SampleView*>> all;
  for (const auto& [level, groups] : levels) {
    t.scopes.push_back(scope_of(fmt::format("level {}", level), level, groups, gate, run.baseline));
    all.insert(all.end(), groups.begin(), groups.end());
  }
  t.scopes.push_back(scope_of("all", 0, all, gate, run.baseline));
  return t;
}

}  // namespace kbv
