#include "supervisor/selftest.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "supervisor/build_stage.h"
#include "supervisor/option_table.h"
#include "supervisor/precision.h"
#include "util/fs.h"
#include "util/interrupt.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> verdict_columns(bool static_only) {
  if (static_only) return {"rejected", "passes_lint"};
  std::vector<std::string> cols;
  for (const char* v : kVerdicts) cols.push_back(v);
  return cols;
}

// Cells are 7 wide (verdicts cut to 7 letters), 11 for the static analysis' two columns.
std::string cell(const std::string& s, bool static_only) {
  return static_only ? fmt::format(" {:>11}", s) : fmt::format(" {:>7.7}", s);
}

void print_matrix(const std::map<std::string, std::map<std::string, int>>& matrix, bool static_only,
                  const Notify& notify) {
  std::vector<std::string> cols = verdict_columns(static_only);
  std::string header = fmt::format("{:<15}", "expected\\got");
  for (const auto& c : cols) header += cell(c, static_only);
  progress(notify, header);
  for (const auto& row : verdict_columns(false)) {
    auto it = matrix.find(row);
    if (it == matrix.end()) continue;
    std::string line = fmt::format("{:<15}", row);
    for (const auto& c : cols) {
      auto hit = it->second.find(c);
      line += cell(hit == it->second.end() ? "." : std::to_string(hit->second), static_only);
    }
    progress(notify, line);
  }
}

// "honest", "failure" (a broken solution, no cheat), or the cheat class; T-classes in numeric order.
std::string class_of(const std::string& cheat, const std::string& expected) {
  if (!cheat.empty()) return cheat;
  return expected == "correct" ? "honest" : "failure";
}

int class_rank(const std::string& c) {
  if (c == "honest") return 0;
  if (c == "failure") return 1;
  if (c.size() > 1 && c[0] == 'T') return 1 + std::atoi(c.c_str() + 1);
  return 100;
}

struct ClassRow {
  std::map<std::string, std::map<std::string, int>> matrix;  // expected -> got -> n
  int total = 0, matches = 0, caught = 0;
};

void print_classes(const std::map<std::string, ClassRow>& classes, bool static_only, const Notify& notify) {
  std::vector<std::string> cols = verdict_columns(static_only);
  std::vector<std::string> order;
  for (const auto& [c, row] : classes) order.push_back(c);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return class_rank(a) < class_rank(b); });
  std::string header = fmt::format("{:<8} {:<13}", "class", "expected\\got");
  for (const auto& c : cols) header += cell(c, static_only);
  header += "   match";
  progress(notify, header);
  for (const auto& c : order) {
    const ClassRow& row = classes.at(c);
    bool first = true;
    for (const auto& [expected, got] : row.matrix) {
      std::string line = fmt::format("{:<8} {:<13}", first ? c : "", expected);
      for (const auto& col : cols) {
        auto hit = got.find(col);
        line += cell(hit == got.end() ? "." : std::to_string(hit->second), static_only);
      }
      if (first) line += fmt::format("   {}/{}", row.matches, row.total);
      progress(notify, line);
      first = false;
    }
  }
}

}  // namespace

SelftestResult run_selftest(const SelftestOptions& opt, const Notify& notify) {
  FileText text = read_file(opt.manifest);
  if (!text.ok) return {Outcome::fail(Status::input_error, text.error), {}};
  json manifest = json::parse(text.text, nullptr, false);
  if (!manifest.is_array())
    return {Outcome::fail(Status::input_error, opt.manifest.string() + ": not a JSON list of entries"), {}};
  fs::path root = opt.root.empty() ? fs::absolute(opt.manifest).parent_path().parent_path() : opt.root;
  // An entry's "protocol" is applied as `kbv eval --protocol P` with selftest's own flags after it
  // (the protocol first, the knobs given adjust it): checked for every entry before anything runs,
  // and kept in its canonical form, which is what apply_eval_options takes.
  const EvalOption* protocol_option = find_eval_option("protocol");
  for (size_t i = 0; i < manifest.size(); ++i) {
    json& e = manifest[i];
    if (!e.is_object() || !e.contains("protocol")) continue;
    json canonical;
    if (std::string why = check_option_value(*protocol_option, e["protocol"], canonical); !why.empty())
      return {Outcome::fail(Status::input_error, fmt::format("{}: entry {} ({}): protocol: {}", opt.manifest.string(), i + 1,
                                                             e.value("solution", "?"), why)),
              {}};
    e["protocol"] = std::move(canonical);
  }
  auto options_for = [&](const json& e) {
    EvalOptions o = opt.eval;
    if (e.contains("protocol")) {
      json c = opt.given.is_object() ? opt.given : json::object();
      c["protocol"] = e["protocol"];
      apply_eval_options(c, o);
    }
    o.device = e.value("device", "cpu");
    if (auto p = parse_policy(e.value("policy", ""))) o.protocol.policy = *p;
    // An entry's "precision" (bf16, fp16) applies to it alone, with that precision's tolerance.
    if (std::string pr = e.value("precision", ""); valid_precision(pr)) set_precision(o.protocol, pr);
    // "trials", "flaky_reruns": an entry whose verdict is a matter of odds (a flaky candidate) names
    // the counts that make it all but certain.
    if (auto t = e.find("trials"); t != e.end() && t->is_number_integer() && t->get<int>() > 0)
      o.protocol.trials = t->get<int>();
    if (auto r = e.find("flaky_reruns"); r != e.end() && r->is_number_integer() && r->get<int>() >= 0)
      o.protocol.flaky_reruns = r->get<int>();
    // "write_cap_mib": an attack on the host's storage shown at a size that is cheap to write.
    if (auto w = e.find("write_cap_mib"); w != e.end() && w->is_number_unsigned() && w->get<uint64_t>() <= kMaxWriteCapMib)
      o.worker.write_cap_bytes = w->get<uint64_t>() << 20;
    return o;
  };

  // One environment per device present in the corpus; its probe worker becomes the reference.
  std::map<std::string, std::unique_ptr<ReferenceHost>> hosts;
  std::map<std::string, std::optional<Environment>> envs;
  std::map<std::string, std::string> env_errors;
  for (const auto& e : manifest) {
    std::string device = e.value("device", "cpu");
    if ((!opt.device.empty() && device != opt.device) || opt.static_only) continue;
    if (envs.count(device)) continue;
    EvalOptions o = opt.eval;
    o.device = device;
    std::string err;
    std::unique_ptr<WorkerProcess> idle;
    envs[device] = probe_environment(o, err, &idle);
    if (!envs[device]) env_errors[device] = err;
    hosts[device] = std::make_unique<ReferenceHost>();
    hosts[device]->adopt(std::move(idle));
  }

  // Compile every runnable entry ahead of its evaluation, on a pool of CPU threads per device
  // (entries are then evaluated in manifest order, taking their builds in the same order).
  std::map<std::string, std::vector<BuildItem>> items;
  for (const auto& e : manifest) {
    std::string device = e.value("device", "cpu");
    if ((!opt.device.empty() && device != opt.device) || opt.static_only || !envs[device]) continue;
    fs::path solution = root / e.value("solution", "");
    items[device].push_back({load_solution(solution), solution, options_for(e), std::nullopt});
  }
  std::map<std::string, std::unique_ptr<BuildQueue>> queues;
  for (auto& [device, list] : items)
    queues[device] = queue_builds(std::move(list), *envs[device], opt.build_jobs);
  std::map<std::string, size_t> taken;  // next item index per device queue

  std::map<std::string, std::map<std::string, int>> matrix;
  std::map<std::string, ClassRow> classes;
  json entries = json::array();
  int mismatches = 0, skipped = 0, honest_rejected = 0, cheats_passed = 0, gaps = 0;
  size_t n = manifest.size(), i = 0;
  for (const auto& e : manifest) {
    ++i;
    std::string device = e.value("device", "cpu");
    if (!opt.device.empty() && device != opt.device) continue;
    std::string expected = e.value("expected", "");
    std::string cheat = e.value("cheat", json(nullptr)).is_string() ? e["cheat"].get<std::string>() : "";
    std::string policy = e.value("policy", "strict");
    std::string lint_rule = e.value("lint", "");
    json row = {{"problem", e.value("problem", "")}, {"solution", e.value("solution", "")}, {"device", device},
                {"policy", policy}, {"expected", expected}, {"cheat", cheat.empty() ? json(nullptr) : json(cheat)}};
    if (e.contains("precision")) row["precision"] = e["precision"];
    if (e.contains("protocol")) row["protocol"] = e["protocol"];
    EvalOptions o = options_for(e);
    std::string got;
    bool match = false;
    if (opt.static_only) {
      // What the static analysis alone decides: the entries naming a `lint` rule, and only they, rejected.
      fs::path solution = root / e.value("solution", "");
      SolutionSource s = load_solution(solution);
      LintReport r = s.ok ? lint_candidate(s, solution, o.protocol.policy, o.protocol.precision) : LintReport{};
      got = r.rejected() ? "rejected" : "passes_lint";
      bool by_rule = false;
      for (const auto& x : r.findings) by_rule = by_rule || (x.rule == lint_rule && x.severity == "reject");
      match = lint_rule.empty() ? !r.rejected() : by_rule;
      if (!s.ok) row["error"] = s.error;
      row["findings"] = r.findings_json();
      row["message"] = r.rejected() ? r.rejection_message() : "";
    } else {
      if (!envs[device]) {
        ++skipped;
        row["got"] = nullptr;
        row["skipped"] = env_errors[device];
        progress(notify, fmt::format("[{}/{}] SKIPPED {}: {}", i, n, row["solution"].get<std::string>(),
                                     env_errors[device]));
        entries.push_back(row);
        continue;
      }
      Pair pair;
      pair.problem_path = root / e.value("problem", "");
      pair.solution_path = root / e.value("solution", "");
      ReferenceHost& host = *hosts[device];
      BuildResult built = queues[device]->get(taken[device]++);
      Record record = evaluate_pair(pair, o, *envs[device], host, &built);
      got = verdict_name(record.verdict);
      if (record.verdict == Verdict::interrupted) break;
      row["message"] = record.message;
      row["findings"] = json::array();
      for (const auto& f : record.findings) row["findings"].push_back(f.to_json());
      match = got == expected;
      // `also`: other verdicts that are as right for it (a cheat whose catching depends on what
      // the memory it reads without writing happens to hold); never `correct`.
      for (const auto& v : e.value("also", json::array()))
        if (v.is_string() && v != "correct" && v == got) match = true;
      // `audit`: the runtime-audit rule (docs/POLICY.md) that must be the one rejecting it.
      if (e.contains("audit") && got == "rejected") {
        bool by_rule = false;
        for (const auto& f : record.findings)
          by_rule = by_rule || (f.rule == e.value("audit", "") && f.rejects());
        if (!by_rule) {
          match = false;
          row["audit_rule_missing"] = e["audit"];
        }
      }
      if (e.contains("fails_only") && got == "wrong_output") {
        std::set<std::string> want, failed;
        for (const auto& d : e["fails_only"]) want.insert(d.get<std::string>());
        for (const auto& d : record.distributions)
          if (!d.passed.value_or(true)) failed.insert(d.distribution);
        if (want != failed) {
          match = false;
          row["failed_distributions"] = failed;
        }
      }
    }
    row["got"] = got;
    // An entry whose defence is not built yet is a known gap: shown, counted apart, not hidden.
    std::string pending = e.value("pending", "");
    if (!pending.empty()) row["pending"] = pending;
    bool gap = !match && !pending.empty();
    row["match"] = match;
    matrix[expected][got]++;
    if (gap) ++gaps;
    else if (!match) ++mismatches;
    if (expected == "correct" && got != "correct" && got != "passes_lint") ++honest_rejected;
    ClassRow& c = classes[class_of(cheat, expected)];
    c.matrix[expected][got]++;
    c.total++;
    c.matches += match;
    if (!cheat.empty()) {
      if (got != "correct" && got != "passes_lint") c.caught++;
      else if (got == "correct") ++cheats_passed;
    }
    std::string label = row["solution"].get<std::string>() + (policy == "strict" ? "" : " (" + policy + ")") +
                        (e.contains("protocol") ? " (" + o.protocol.name + ")" : "");
    progress(notify, fmt::format("[{}/{}] {:<4} {:<72} {:<13} {}", i, n, device, label, got,
                                 match ? ""
                                 : gap ? fmt::format("KNOWN GAP (expected {}; {})", expected, pending)
                                 : opt.static_only
                                     ? fmt::format("MISMATCH (lint rule expected: {})", lint_rule.empty() ? "none" : lint_rule)
                                     : fmt::format("MISMATCH (expected {})", expected)));
    entries.push_back(row);
  }
  progress(notify, "");
  print_matrix(matrix, opt.static_only, notify);
  progress(notify, "\nper cheat class (honest: no cheat; failure: broken, no cheat):");
  print_classes(classes, opt.static_only, notify);
  if (opt.static_only)
    progress(notify, fmt::format("static analysis only: {} mismatch(es) (an entry naming a lint rule not rejected by "
                                 "it, or another entry rejected), {} honest solution(s) rejected",
                                 mismatches, honest_rejected));
  else
    progress(notify, fmt::format("{} mismatch(es), {} known gap(s) (defence pending), {} honest solution(s) rejected, "
                                 "{} cheat(s) judged correct, {} skipped",
                                 mismatches, gaps, honest_rejected, cheats_passed, skipped));
  json classes_json = json::object();
  for (const auto& [c, v] : classes)
    classes_json[c] = {{"caught", v.caught}, {"total", v.total}, {"matches", v.matches}, {"matrix", v.matrix}};
  json devices = json::object();
  for (const auto& [d, env] : envs) devices[d] = env ? json(env->device_name) : json(nullptr);
  SelftestResult result;
  result.summary = json{{"entries", entries},   {"matrix", matrix},     {"classes", classes_json},
                        {"mismatches", mismatches}, {"known_gaps", gaps}, {"honest_rejected", honest_rejected},
                        {"cheats_judged_correct", cheats_passed}, {"skipped", skipped}, {"devices", devices},
                        {"static_only", opt.static_only}};
  if (interrupted()) result.outcome = Outcome::fail(Status::interrupted, "");
  else if (mismatches > 0) result.outcome = Outcome::fail(Status::incomplete, "");
  return result;
}

}  // namespace kbv
