// Records -> sample views -> per-level and overall metrics (docs/METRICS.md).
#include "report/summary.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formats/eval_results.h"
#include "protocol/registry.h"
#include "record/trust.h"

namespace kbv {
namespace {

std::optional<double> positive(std::optional<double> v) {
  if (!v || !(*v > 0) || !std::isfinite(*v)) return std::nullopt;
  return v;
}

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (!item.empty() && std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// Standard and hidden gates of a record evaluated by kbv itself.
void native_gates(const Record& record, SampleView& v) {
  const RecordProtocol& protocol = record.protocol;
  const std::string name = protocol.name.value_or(kProtocolKbv);
  // upstream's check only (D1, no hidden distributions); kernelbench is kernelbench-paper's old name
  if (name == kProtocolKernelbenchAlias || name == kProtocolKernelbenchPaper || name == kProtocolKernelbenchMain) {
    v.standard = v.verdict == "correct";
    return;
  }
  v.hidden = v.verdict == "correct";
  std::vector<std::string> order;
  if (protocol.distributions)
    for (const auto& d : *protocol.distributions) order.push_back(d.name);
  else if (auto it = protocol.unknown.extra.find("distributions"); it != protocol.unknown.extra.end() && it->is_array())
    for (const auto& d : *it)  // entries of another shape: their names, when they have one
      order.push_back(d.is_object() && d.contains("name") && d["name"].is_string() ? d["name"].get<std::string>()
                                                                                  : std::string());
  if (order.empty()) order = {"D1", "D2", "D3", "D4"};
  const long d1_per_trial = std::count(order.begin(), order.end(), std::string("D1"));
  if (d1_per_trial == 0) return;  // no standard distribution in this protocol: not run
  if (v.verdict == "correct") {
    v.standard = true;
    return;
  }
  const bool stopped_early = v.verdict == "runtime_error" || v.verdict == "timeout" || v.verdict == "crashed";
  // flaky: the checks ran as for wrong_output (a failed one, re-run, passed once): its D1 results decide.
  if (v.verdict != "wrong_output" && v.verdict != "flaky" && !stopped_early) {
    v.standard = false;  // did not compile, rejected as a cheat, or a broken problem
    return;
  }
  const std::vector<TrialResult>& dists = record.distributions;
  long d1 = 0, d1_passed = 0;
  for (const auto& d : dists) {
    if (d.distribution != "D1") continue;
    ++d1;
    if (d.passed.value_or(false)) ++d1_passed;
  }
  const long expected = protocol.trials.value_or(5) * d1_per_trial;
  v.standard = d1 > 0 && d1 == d1_passed && d1 >= expected;
  // Every D1 check so far passed, and the evaluation stopped at a non-D1 distribution: the standard
  // check never finished. Counted as not passed, and shown.
  if (!*v.standard && stopped_early && d1 > 0 && d1 == d1_passed)
    v.standard_incomplete = order[dists.size() % order.size()] != "D1";
}

// More than half of the timed samples carry a timing warning: the run's speedups are mostly
// unreliable, and the top of the report says so with the commonest warnings.
std::string timing_notice(const ScopeSummary& s) {
  if (s.timed == 0 || 2 * s.timing_warned <= s.timed) return "";
  std::vector<std::pair<std::string, int>> labels(s.timing_warnings.begin(), s.timing_warnings.end());
  std::stable_sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [label, n] : labels) parts.push_back(fmt::format("{} {}", label, n));
  return fmt::format("most speedups of this run are unreliable: {} of {} timed samples carry a timing warning ({}); "
                     "see each sample's timing warnings and time again on an idle host (docs/TIMING.md)",
                     s.timing_warned, s.timed, fmt::join(parts, ", "));
}

std::string verdict_from_flags(const Record& record) {
  if (record.correctness) return "correct";
  return record.compiled ? "wrong_output" : "compile_error";
}

}  // namespace

SampleView view_of(const Record& record) {
  SampleView v;
  v.present = true;
  v.level = record.level;
  v.problem_id = record.problem_id;
  v.sample_id = record.sample_id;
  if (!record.problem.empty()) v.problem = std::filesystem::path(record.problem).filename().string();
  v.compiled = record.compiled;
  v.verdict = verdict_name(record.verdict);
  if (v.verdict.empty()) v.verdict = verdict_from_flags(record);
  if (v.verdict != "correct") v.reason = record.message;

  for (const auto& f : record.findings) {
    if (!f.rejects()) continue;
    std::string rule = f.unknown.absent.count("rule") ? "unnamed rule" : f.rule;
    add_unique(v.cheats, f.cheat.empty() ? rule : f.cheat + " " + rule);
  }
  for (const auto& d : record.distributions)
    if (d.passed && !*d.passed)
      add_unique(v.failed_distributions, d.unknown.absent.count("distribution") ? "?" : d.distribution);

  if (record.kernelbench) {  // an upstream entry brought in by `kbv import`
    const Imported& imported = *record.kernelbench;
    if (imported.standard_correctness) v.standard = *imported.standard_correctness;
    if (imported.hidden_correctness) v.hidden = *imported.hidden_correctness;
    for (const auto& d : imported.hidden_failed.value_or(std::vector<std::string>{})) add_unique(v.failed_distributions, d);
  } else {
    native_gates(record, v);
  }

  if (record.timing) {
    for (const auto& [baseline, x] : record.timing->speedup.value_or(std::map<std::string, double>{}))
      if (auto s = positive(x)) {
        v.speedup[baseline] = *s;
        if (auto ci = speedup_interval(*record.timing, baseline)) v.speedup_ci95[baseline] = *ci;
        v.calls[baseline] = speedup_call(*record.timing, baseline);
        auto base = record.timing->baselines.value_or(nlohmann::json::object());
        if (record.timing->candidate && base.contains(baseline) && base[baseline].is_object())
          if (auto cm = positive(record.timing->candidate->mean_ms))
            if (auto bm = base[baseline].find("mean_ms"); bm != base[baseline].end() && bm->is_number())
              if (auto b = positive(bm->get<double>()))  // the figures upstream's files store
                v.mean_speedup[baseline] = upstream_rounded(*b) / upstream_rounded(*cm);
      }
    if (auto s = positive(record.timing->speed_of_light)) v.speed_of_light = *s;
  }
  if (auto r = positive(record.runtime)) v.runtime_ms = *r;
  v.timing_warnings = timing_warning_labels(record);
  const Memory memory = record.memory.value_or(Memory{});
  if (memory.measured.value_or(false)) {
    for (const auto& [baseline, x] : memory.ratio.value_or(std::map<std::string, double>{}))
      if (auto r = positive(x)) v.memory_ratio[baseline] = *r;
  } else {
    v.memory_note = memory.reason.value_or("");
  }
  return v;
}

std::vector<int> pass_at_k_values(int samples_per_problem) {
  std::vector<int> ks;
  for (int k : {1, 5, 10, 100})
    if (k <= samples_per_problem) ks.push_back(k);
  if (samples_per_problem > 0 && (ks.empty() || ks.back() != samples_per_problem)) ks.push_back(samples_per_problem);
  return ks;
}

namespace {

// A problem's slots, one per sample index of its level.
using ProblemGroup = std::vector<const SampleView*>;

GateSummary gate_summary(const std::vector<ProblemGroup>& problems, Gate gate, const std::string& baseline,
                         const std::vector<int>& ks, FastPMode mode) {
  GateSummary g;
  int slots = 0;
  for (const auto& p : problems)
    for (const auto* v : p) {
      ++slots;
      if ((gate == Gate::standard ? v->standard : v->hidden).has_value()) g.available = true;
      if (v->passes(gate)) ++g.correct;
    }
  if (!g.available) return g;
  g.correct_rate = slots ? static_cast<double>(g.correct) / slots : 0;

  auto scored = [&](const SampleView* v, const std::string& b) {
    Scored s{v->passes(gate), std::nullopt, std::nullopt};
    if (auto it = v->speedup.find(b); it != v->speedup.end()) s.speedup = it->second;
    if (auto it = v->speedup_ci95.find(b); it != v->speedup_ci95.end()) s.ci = it->second;
    return s;
  };
  auto memory_of = [&](const SampleView* v) {
    MemoryScored m{v->passes(gate), std::nullopt};
    if (auto it = v->memory_ratio.find(baseline); it != v->memory_ratio.end()) m.ratio = it->second;
    return m;
  };

  for (const char* b : kReportBaselines) {
    std::vector<Scored> all, best;
    for (const auto& p : problems) {
      std::vector<Scored> mine;
      for (const auto* v : p) mine.push_back(scored(v, b));
      all.insert(all.end(), mine.begin(), mine.end());
      auto i = best_of_n(mine);
      best.push_back(i ? mine[*i] : Scored{});
    }
    g.speed[b] = speed_metrics(all, mode);
    g.best_speed[b] = speed_metrics(best, mode);
  }

  std::vector<MemoryScored> memory, best_memory;
  for (const auto& p : problems) {
    std::vector<Scored> mine;
    for (const auto* v : p) {
      memory.push_back(memory_of(v));
      mine.push_back(scored(v, baseline));
    }
    auto i = best_of_n(mine);
    if (i) ++g.best_correct;
    best_memory.push_back(i ? memory_of(p[*i]) : MemoryScored{});
  }
  g.memory = memory_metrics(memory);
  g.best_memory = memory_metrics(best_memory);
  g.best_correct_rate = problems.empty() ? 0 : static_cast<double>(g.best_correct) / problems.size();

  for (int k : ks) {
    double sum = 0;
    bool ok = !problems.empty();
    for (const auto& p : problems) {
      int n = static_cast<int>(p.size());
      int c = 0;
      for (const auto* v : p) c += v->passes(gate) ? 1 : 0;
      auto value = pass_at_k(n, c, k);
      if (!value) {
        ok = false;
        break;
      }
      sum += *value;
    }
    if (ok) g.pass_at_k[k] = sum / problems.size();
  }
  return g;
}

ScopeSummary scope_summary(const std::string& name, int level, const std::vector<ProblemGroup>& problems,
                           const std::string& baseline, FastPMode mode) {
  ScopeSummary s;
  s.name = name;
  s.level = level;
  s.problems = static_cast<int>(problems.size());
  std::set<size_t> sizes;
  for (const auto& p : problems) {
    sizes.insert(p.size());
    for (const auto* v : p) {
      ++s.slots;
      if (v->present)
        ++s.records;
      else
        ++s.missing;
      if (v->compiled) ++s.compiled;
      if (v->standard_incomplete) ++s.standard_incomplete;
      ++s.verdicts[v->verdict];
      for (const auto& d : v->failed_distributions) ++s.failed_distributions[d];
      for (const auto& c : v->cheats) ++s.cheats[c];
      for (const auto& w : v->timing_warnings) ++s.timing_warnings[w];
      if (!v->speedup.empty() || v->runtime_ms) {
        ++s.timed;
        if (!v->timing_warnings.empty()) ++s.timing_warned;
      }
    }
  }
  s.samples_per_problem = sizes.size() == 1 ? static_cast<int>(*sizes.begin()) : 0;  // 0: varies
  s.compile_rate = s.slots ? static_cast<double>(s.compiled) / s.slots : 0;
  int min_samples = sizes.empty() ? 0 : static_cast<int>(*sizes.begin());
  std::vector<int> ks = pass_at_k_values(min_samples);
  s.standard = gate_summary(problems, Gate::standard, baseline, ks, mode);
  s.hidden = gate_summary(problems, Gate::hidden, baseline, ks, mode);
  return s;
}

}  // namespace

nlohmann::ordered_json verified_eval_results(const std::vector<Record>& records, bool hidden) {
  return verified_eval_results(records, hidden, [](const Record& r) {
    SampleView v = view_of(r);
    return ExportGates{v.compiled, v.standard, v.hidden, v.failed_distributions};
  });
}

RunSummary summarize(const std::string& name, const std::vector<Record>& records,
                     const std::vector<ProblemSlot>& problems, const std::string& baseline, FastPMode fast_p_mode,
                     const std::vector<Exclusion>& exclusions) {
  RunSummary run;
  run.name = name;
  run.baseline = baseline;
  run.fast_p_mode = fast_p_mode;

  std::map<std::tuple<int, int, int>, SampleView> by_slot;
  std::map<int, std::set<int>> sample_ids;  // level -> sample ids seen
  for (const auto& r : records) {
    SampleView v = view_of(r);
    if (run.protocol.empty()) run.protocol = r.protocol.name.value_or("");
    if (run.device.empty()) {
      run.device = r.protocol.device_name.value_or("");
      if (run.device.empty()) run.device = r.metadata.hardware.value_or("");
    }
    // What each baseline measured: an imported baseline file says (report/upstream.cc), kbv's own
    // baselines are what their names say.
    for (const auto& [b, x] : v.speedup) {
      std::string label;
      if (r.timing && r.timing->baselines && r.timing->baselines->is_object())
        if (auto it = r.timing->baselines->find(b); it != r.timing->baselines->end() && it->is_object())
          if (auto m = it->find("measured"); m != it->end() && m->is_string()) label = m->get<std::string>();
      if (label.empty()) label = native_baseline_label(b);
      auto [it, inserted] = run.baseline_labels.try_emplace(b, label);
      if (!inserted && it->second != label && it->second.find(label) == std::string::npos)
        it->second += " / " + label;  // records of one run measured against different things: both shown
    }
    sample_ids[v.level].insert(v.sample_id);
    by_slot[{v.level, v.problem_id, v.sample_id}] = std::move(v);
  }

  // Problems out of the denominator: their records are not scored, and the report lists them.
  for (const auto& e : exclusions) {
    if (!sample_ids.count(e.level)) continue;
    Exclusion& x = run.excluded.emplace_back(e);
    auto it = by_slot.lower_bound({e.level, e.id, INT_MIN});
    while (it != by_slot.end() && std::get<0>(it->first) == e.level && std::get<1>(it->first) == e.id) {
      if (x.name.empty()) x.name = it->second.problem;
      it = by_slot.erase(it);
      ++run.excluded_records;
    }
    for (const auto& p : problems)  // no record names it: the dataset does
      if (x.name.empty() && p.level == e.level && p.id == e.id) x.name = p.name;
  }
  auto is_excluded = [&](int level, int id) {
    return std::any_of(run.excluded.begin(), run.excluded.end(),
                       [&](const Exclusion& e) { return e.level == level && e.id == id; });
  };
  if (!run.excluded.empty())
    run.notes.push_back(fmt::format("{} problem(s) excluded from the denominator ({} record(s) of theirs not scored): "
                                    "see \"excluded from the denominator\"",
                                    run.excluded.size(), run.excluded_records));

  // The denominator: the given problems of the levels the run covers, plus any problem the run
  // has a record for that the dataset lacks.
  std::map<std::pair<int, int>, std::string> slots_problems;
  if (!problems.empty()) {
    for (const auto& p : problems)
      if (sample_ids.count(p.level) && !is_excluded(p.level, p.id)) slots_problems[{p.level, p.id}] = p.name;
    int extra = 0;
    for (const auto& [key, v] : by_slot) {
      auto [it, inserted] = slots_problems.try_emplace({std::get<0>(key), std::get<1>(key)}, v.problem);
      if (inserted) ++extra;
    }
    int given = 0;
    for (const auto& p : problems) given += sample_ids.count(p.level) && !is_excluded(p.level, p.id) ? 1 : 0;
    run.notes.push_back(
        fmt::format("denominator: the {} problems of the dataset in the level(s) this run covers{}; "
                    "a problem without a sample counts as a failure",
                    given, run.excluded.empty() ? "" : ", less the excluded ones"));
    if (extra)
      run.notes.push_back(
          fmt::format("{} problem(s) with records are not in the dataset; they are added to the "
                      "denominator",
                      extra));
  } else {
    for (const auto& [key, v] : by_slot) slots_problems.try_emplace({std::get<0>(key), std::get<1>(key)}, v.problem);
    run.notes.push_back(
        fmt::format("denominator: the {} problems that have a record in this run (pass --problems DIR "
                    "to score over the whole dataset: problems without a sample count as failures)",
                    slots_problems.size()));
  }

  // Every slot: each problem times its level's sample ids.
  for (const auto& [pk, problem_name] : slots_problems) {
    const auto& [level, id] = pk;
    for (int sid : sample_ids[level]) {
      auto it = by_slot.find({level, id, sid});
      SampleView v;
      if (it != by_slot.end()) {
        v = it->second;
      } else {
        v.level = level;
        v.problem_id = id;
        v.sample_id = sid;
        v.verdict = "missing";
        v.reason = "no sample in the run";
      }
      if (v.problem.empty()) v.problem = problem_name;
      run.samples.push_back(std::move(v));
    }
  }

  std::set<std::string> seen;
  for (const auto& v : run.samples)
    for (const auto& [b, x] : v.speedup) seen.insert(b);
  for (const char* b : kReportBaselines)
    if (seen.count(b)) run.baselines_seen.push_back(b);
  for (const auto& b : seen)
    if (std::find(run.baselines_seen.begin(), run.baselines_seen.end(), b) == run.baselines_seen.end())
      run.baselines_seen.push_back(b);

  // Group slots by level, then by problem.
  std::map<int, std::vector<ProblemGroup>> levels;
  for (size_t i = 0; i < run.samples.size(); ++i) {
    const SampleView& v = run.samples[i];
    auto& groups = levels[v.level];
    if (groups.empty() || groups.back().front()->problem_id != v.problem_id) groups.emplace_back();
    groups.back().push_back(&v);
  }
  std::vector<ProblemGroup> all;
  for (const auto& [level, groups] : levels) {
    run.scopes.push_back(scope_summary(fmt::format("level {}", level), level, groups, baseline, fast_p_mode));
    all.insert(all.end(), groups.begin(), groups.end());
  }
  if (levels.size() > 1) run.scopes.push_back(scope_summary("all", 0, all, baseline, fast_p_mode));
  if (!run.scopes.empty()) run.timing_notice = timing_notice(run.scopes.back());

  bool any_timing = !run.baselines_seen.empty();
  if (any_timing)
    run.notes.push_back(
        fast_p_mode == FastPMode::interval
            ? "fast_p counts a sample when the lower bound of its speedup's 95% interval > p (a sample without an "
              "interval: its speedup); \"uncertain\": correct samples whose interval straddles p; speedups in "
              "brackets: 95% intervals (kbv report --fast-p point: KernelBench's definition)"
            : "fast_p counts a sample when its speedup > p (point estimate, KernelBench's definition); speedups in "
              "brackets: 95% intervals");
  if (!any_timing)
    run.notes.push_back(
        "speed: not measured (no record carries a speedup; run with timing, or pass --baseline-file "
        "for imported runs)");
  else if (std::find(run.baselines_seen.begin(), run.baselines_seen.end(), baseline) == run.baselines_seen.end())
    run.notes.push_back(fmt::format("speed against the {} baseline: not measured (records have speedups against: {})",
                                    baseline, fmt::join(run.baselines_seen, ", ")));
  return run;
}

}  // namespace kbv
