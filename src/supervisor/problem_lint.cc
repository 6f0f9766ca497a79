#include "supervisor/problem_lint.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "problem/problem.h"
#include "supervisor/precision.h"
#include "util/interrupt.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

json ProblemFinding::to_json() const {
  json j = {{"rule", rule}, {"severity", severity}, {"distributions", distributions}, {"message", message}};
  if (!allowed.empty()) j["allowed"] = allowed;
  return j;
}

bool problems_clean(const std::vector<ProblemFinding>& findings) {
  for (const auto& f : findings)
    if (f.severity == "finding" && f.allowed.empty()) return false;
  return true;
}

namespace {

// One sighting of a rule; sightings of the same rule on the same output are merged.
struct Sighting {
  std::string rule;
  std::string severity;
  int output = -1;          // -1: not about one output
  std::string distribution; // "" when not per distribution
  std::string head;         // what was seen, without the distribution
  std::string numbers;      // the numbers of this sighting
};

std::string dist_label(const Distribution& d) { return fmt::format("{} (x{:g})", d.name, d.scale); }

std::string shape_of(const json& sizes) {
  std::string s;
  for (const auto& n : sizes) s += (s.empty() ? "" : ", ") + std::to_string(n.get<int64_t>());
  return "[" + s + "]";
}

std::string comparison_numbers(const json& c) {
  double rel = c.value("rel_l2_error", 0.0);
  std::string rel_text =
      rel < 0 ? "relative L2 n/a (the expected output is all zeros)" : fmt::format("relative L2 {:.3g}", rel);
  return fmt::format("max abs error {:.3g}, {}, {} of {} elements outside atol/rtol", c.value("max_abs_error", 0.0),
                     rel_text, c.value("mismatches", int64_t{0}), c.value("numel", int64_t{0}));
}

// A fit over three or more sizes whose points stray further than this from it (natural log: 10%)
// predicts nothing: the magnitude does not follow one power of the size.
constexpr double kExtrapolationResidual = 0.1;

// At reduced sizes: an all-zero output predicted within atol/rtol elementwise at the file's sizes,
// from the output's largest magnitude at the reduced sizes (worker/problem_stats.cc
// extrapolation_points); `numbers` then says from what. Empty when not predicted.
std::string zeros_extrapolated(const json& x, std::string& numbers) {
  if (!x.is_object() || !x.contains("points") || !x["points"].is_array()) return "";
  std::vector<std::pair<double, double>> points;
  std::string from;
  for (const auto& p : x["points"]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) return "";
    points.emplace_back(p[0].get<double>(), p[1].get<double>());
    from += fmt::format("{}{:.4g} at {} input elements", from.empty() ? "" : ", ", points.back().second,
                        p[0].get<int64_t>());
  }
  const double file_n = x.value("file_input_numel", 0.0), atol = x.value("atol", 1e-3), rtol = x.value("rtol", 1e-3);
  PowerFit fit = fit_power(points);
  if (!fit.ok || !(fit.exponent < 0) || file_n <= 0) return "";
  if (points.size() >= 3 && fit.max_residual > kExtrapolationResidual) return "";
  const double predicted = fit.at(file_n);
  if (!(predicted * (1.0 - rtol) <= atol)) return "";
  numbers = fmt::format("max |expected| {}; it falls as (input elements)^{:.3f}, so at the file's {} input elements "
                        "about {:.3g}, within atol {:g} (rtol {:g})",
                        from, fit.exponent, static_cast<int64_t>(file_n), predicted, atol, rtol);
  return x.value("rel_l2", true)
             ? "extrapolated to the file's sizes: an all-zero output would be within atol/rtol elementwise there; "
               "only the relative-L2 floor would reject it (under --protocol kernelbench, which has no floor, "
               "zeros would pass). The reduced sizes scale what the reduction runs over, so the reduced run "
               "cannot show it"
             : "extrapolated to the file's sizes: an all-zero output would pass there. The reduced sizes scale "
               "what the reduction runs over, so the reduced run cannot show it";
}

// Outputs (of more than one element) that are one value throughout under a distribution, e.g.
// ReLU under D4: there zeros, replays and constants pass by construction. That is a finding only
// if it holds under every distribution; otherwise a note that the distribution checks that one
// value while the others judge the kernel.
struct UniformOutputs {
  std::map<int, std::set<std::string>> where;  // output -> distributions where it is uniform
  size_t linted = 0;                            // draws that ran
  // Uniform under `dist` but not under every distribution: the others judge the kernel.
  bool judged_elsewhere(int output, const std::string& dist) const {
    auto it = where.find(output);
    return it != where.end() && it->second.count(dist) && it->second.size() < linted;
  }
};

UniformOutputs uniform_outputs(const std::vector<ProblemDraw>& draws) {
  UniformOutputs u;
  for (const auto& d : draws) {
    if (!d.failure.empty()) continue;
    ++u.linted;
    for (const auto& o : d.reply.value("outputs", json::array()))
      if (!o.contains("note") && o.value("numel", int64_t{0}) > 1 && o.contains("std") && o.value("std", 1.0) == 0.0)
        u.where[o.value("index", 0)].insert(d.distribution.name);
  }
  return u;
}

// What the reference itself does with output `o` of draw reply `r`: NaN/Inf, overflow of a
// reduced-precision reference, disagreement with float64, nondeterminism.
void reference_sightings(std::vector<Sighting>& seen, const json& r, const json& o, const std::string& dist) {
  const int i = o.value("index", 0);
  const int64_t numel = o.value("numel", int64_t{0});
  if (o.contains("nan")) {
    int64_t nan = std::max(o["nan"][0].get<int64_t>(), o["nan"][1].get<int64_t>());
    int64_t inf = std::max(o["inf"][0].get<int64_t>(), o["inf"][1].get<int64_t>());
    if (nan + inf > 0)
      seen.push_back({"nonfinite", "finding", i, dist,
                      "the reference's output has NaN or Inf (kbv then only accepts the same NaN/Inf)",
                      fmt::format("{} NaN and {} Inf of {} elements in one draw", nan, inf, numel)});
  }
  // Precision modes: Inf/NaN the reduced-precision reference makes where the fp32 one is finite.
  if (o.contains("reference_error") && o["reference_error"].value("nonfinite", int64_t{0}) > 0)
    seen.push_back({"overflow", "finding", i, dist,
                    fmt::format("the {0} reference overflows: Inf or NaN where the same model in fp32 is finite "
                                "(no {0} kernel can be judged there; scale the problem's values down)",
                                r.value("precision", "reduced-precision")),
                    fmt::format("{} of {} elements in one draw", o["reference_error"]["nonfinite"].get<int64_t>(),
                                numel)});
  if (o.contains("fp64") && !o["fp64"].value("passed", true))
    seen.push_back({"ill_conditioned", "finding", i, dist,
                    "the " + precision_dtype(r.value("precision", "fp32")) +
                        " reference fails the tolerance against the same model run in float64, so a "
                        "kernel more exact than the reference can fail (rounding noise, cancellation, or memory "
                        "the reference never wrote)",
                    o["fp64"].value("reason", comparison_numbers(o["fp64"]))});
  if (o.contains("repeat")) {
    const json& rep = o["repeat"];
    if (!rep.value("passed", true))
      seen.push_back({"nondeterministic", "finding", i, dist, "two calls on the same inputs disagree beyond the tolerance",
                      rep.value("reason", comparison_numbers(rep))});
    else if (!rep.value("bitwise_equal", true))
      seen.push_back({"nondeterministic_bits", "note", i, dist,
                      "two calls on the same inputs differ bitwise, within the tolerance",
                      fmt::format("max abs error {:.3g}", rep.value("max_abs_error", 0.0))});
  }
}

// Wrong outputs that pass as output `o`: another draw's (a stale output), zeros, a constant.
void passing_fake_sightings(std::vector<Sighting>& seen, const json& o, const std::string& dist) {
  const int i = o.value("index", 0);
  const int64_t numel = o.value("numel", int64_t{0});
  if (o.contains("other_draw")) {
    const json& od = o["other_draw"];
    if (od.value("bitwise_equal", false))
      seen.push_back({"insensitive", "finding", i, dist,
                      "two different draws give bit-identical outputs: the output does not depend on the inputs",
                      fmt::format("{} elements", numel)});
    else if (od.value("passed", false))
      seen.push_back({"insensitive", "finding", i, dist,
                      "another draw's output passes as this draw's: a kernel that returns a stale output passes",
                      comparison_numbers(od)});
  }
  bool zeros_pass = false;
  if (o.contains("zeros")) {
    const json& z = o["zeros"];
    zeros_pass = z.value("passed", false);
    if (zeros_pass)
      seen.push_back({"zeros", "finding", i, dist, "an all-zero output passes",
                      fmt::format("max |expected| {:.3g}; {}", o.value("max_abs", 0.0), comparison_numbers(z))});
    else if (z.value("mismatches", int64_t{1}) == 0)
      seen.push_back({"zeros_elementwise", "note", i, dist,
                      "an all-zero output is within atol/rtol elementwise; only the relative-L2 floor rejects "
                      "it (under --protocol kernelbench, which has no floor, zeros pass)",
                      fmt::format("max |expected| {:.3g}", o.value("max_abs", 0.0))});
    else if (std::string numbers, head = zeros_extrapolated(o.value("extrapolation", json()), numbers); !head.empty())
      seen.push_back({"zeros_extrapolated", "note", i, dist, head, numbers});
  }
  if (o.contains("constant") && !zeros_pass && o["constant"].value("passed", false)) {
    const json& c = o["constant"];
    seen.push_back({"constant", "finding", i, dist, "a constant (the mean of another draw's output) passes",
                    fmt::format("constant {:.6g}; {}", c.value("value", 0.0), comparison_numbers(c))});
  }
}

// What holds for the problem as a whole, from the first draw that reports it (the allow list and
// its error from the last).
struct ProblemWide {
  json inputs, upstream_cast, allow = json::object();
  std::string allow_error;
  std::set<std::string> dropout;
};

// The sightings of every draw's outputs; what holds for the whole problem gathered in `wide`.
void draw_sightings(const std::vector<ProblemDraw>& draws, std::vector<Sighting>& seen, ProblemWide& wide) {
  const UniformOutputs uniform = uniform_outputs(draws);
  for (const auto& d : draws) {
    if (!d.failure.empty()) {
      seen.push_back({"problem_error", "finding", -1, d.distribution.name, "the reference fails", d.failure});
      continue;
    }
    const json& r = d.reply;
    if (wide.inputs.is_null() && r.contains("inputs")) wide.inputs = r["inputs"];
    if (wide.upstream_cast.is_null() && r.contains("upstream_cast") && r["upstream_cast"].is_object())
      wide.upstream_cast = r["upstream_cast"];
    if (r.contains("allow") && r["allow"].is_object()) wide.allow = r["allow"];
    if (r.contains("allow_error")) wide.allow_error = r["allow_error"];
    for (const auto& m : r.value("dropout", json::array())) wide.dropout.insert(m.get<std::string>());
    for (const auto& o : r.value("outputs", json::array())) {
      if (o.contains("note")) {
        seen.push_back({"output_count", "finding", -1, d.distribution.name, o["note"].get<std::string>(), ""});
        continue;
      }
      if (o.contains("fp64_skipped")) {
        seen.push_back({"fp64_skipped", "note", -1, d.distribution.name,
                        "the float64 cross-check did not run: " + o["fp64_skipped"].get<std::string>(), ""});
        continue;
      }
      const bool uniform_here = uniform.judged_elsewhere(o.value("index", 0), d.distribution.name);
      if (uniform_here)
        seen.push_back({"uniform_output", "note", o.value("index", 0), d.distribution.name,
                        "the reference's output is one value throughout (zeros, replays and constants pass "
                        "there; the other distributions judge the kernel)",
                        fmt::format("every element {:.6g}", o.value("mean", 0.0))});
      reference_sightings(seen, r, o, d.distribution.name);
      if (uniform_here) continue;  // replays, zeros and constants pass there by construction
      passing_fake_sightings(seen, o, d.distribution.name);
    }
  }
}

// The inputs' dtypes: integers kbv never scales or casts, floats that hold only whole numbers.
void input_sightings(std::vector<Sighting>& seen, const json& inputs) {
  if (!inputs.is_array()) return;
  for (const auto& in : inputs) {
    if (!in.contains("dtype")) continue;
    std::string what = fmt::format("input {} ({} {})", in.value("index", 0), in["dtype"].get<std::string>(),
                                   shape_of(in["sizes"]));
    if (!in.value("floating", true)) {
      seen.push_back({"integer_input", "note", -1, "",
                      what + " is not floating: the hidden distributions never scale it and kbv never casts it; "
                             "the reference and the kernel get the same values",
                      ""});
    } else if (in.value("integer_valued", false)) {
      seen.push_back({"integer_valued_float", "finding", -1, "",
                      what + " holds only whole numbers: if they are labels, indices or signs, the hidden "
                             "distributions change their meaning (x3, x0.01, x-1); make it an integer tensor",
                      ""});
    }
  }
}

// The sightings that hold for the whole problem: dropout, the inputs, upstream's cast, the allow
// list's error.
void problem_wide_sightings(std::vector<Sighting>& seen, const ProblemWide& wide) {
  for (const auto& m : wide.dropout)
    seen.push_back({"dropout", "finding", -1, "",
                    "dropout in training mode draws a new mask on every call, so no kernel can match the "
                    "reference (use p=0, or drop the dropout)",
                    m});
  input_sightings(seen, wide.inputs);
  if (wide.upstream_cast.is_object()) {
    // Upstream KernelBench's harness casts every input tensor, integers included; kbv never does.
    const json& cast = wide.upstream_cast;
    const std::string dtype = cast.value("dtype", std::string("float32"));
    const std::string how = "under upstream KernelBench's harness, which casts every input tensor to " + dtype +
                            " (integer inputs included; kbv never casts them), ";
    std::string differs;
    for (const auto& c : cast.value("comparisons", json::array()))
      if (!c.value("passed", true) && differs.empty()) differs = comparison_numbers(c);
    if (cast.contains("failed"))
      seen.push_back({"upstream_cast", "note", -1, "", how + "the reference fails: a kernel cannot be judged there",
                      cast["failed"].get<std::string>()});
    else if (!differs.empty())
      seen.push_back({"upstream_cast", "note", -1, "", how + "the reference computes something else", differs});
  }
  if (!wide.allow_error.empty()) seen.push_back({"allow_error", "finding", -1, "", wide.allow_error, ""});
}

// Sightings of the same rule on the same output merged, in first-seen order: one finding each,
// naming the distributions and the first sighting's numbers; those the allow list names marked
// allowed, and allow entries no finding used noted.
std::vector<ProblemFinding> merge_sightings(const std::string& path, const std::vector<ProblemDraw>& draws,
                                            const std::vector<Sighting>& seen, const json& allow) {
  std::vector<ProblemFinding> findings;
  std::map<std::pair<std::string, int>, size_t> index;
  std::map<std::pair<std::string, int>, std::string> first_numbers;
  std::map<std::string, std::string> labels;
  for (const auto& d : draws) labels[d.distribution.name] = dist_label(d.distribution);
  for (const auto& s : seen) {
    auto key = std::make_pair(s.rule, s.output);
    auto it = index.find(key);
    if (it == index.end()) {
      ProblemFinding f;
      f.rule = s.rule;
      f.severity = s.severity;
      f.message = s.head;
      if (!s.distribution.empty()) f.distributions.push_back(s.distribution);
      index[key] = findings.size();
      first_numbers[key] = s.numbers.empty() ? "" : (s.distribution.empty() ? s.numbers
                                                                               : s.distribution + ": " + s.numbers);
      findings.push_back(f);
    } else if (!s.distribution.empty()) {
      findings[it->second].distributions.push_back(s.distribution);
    }
  }
  for (auto& [key, i] : index) {
    ProblemFinding& f = findings[i];
    std::string where;
    for (const auto& d : f.distributions) where += (where.empty() ? "" : ", ") + labels[d];
    std::string prefix = path + ": " + (key.second >= 0 ? fmt::format("output {}: ", key.second) : "");
    f.message = prefix + f.message + (where.empty() ? "" : " under " + where);
    if (!first_numbers[key].empty()) f.message += " (" + first_numbers[key] + ")";
    auto a = allow.find(f.rule);
    if (a != allow.end()) f.allowed = a->get<std::string>();
  }
  for (const auto& [rule, reason] : allow.items()) {
    bool used = false;
    for (const auto& f : findings) used = used || f.rule == rule;
    if (!used)
      findings.push_back({"unused_allow", "note", {},
                          fmt::format("{}: KBV_LINT_ALLOW names '{}' but the lint found no such finding here", path,
                                      rule),
                          ""});
  }
  return findings;
}

}  // namespace

double PowerFit::at(double x) const { return coefficient * std::pow(x, exponent); }

PowerFit fit_power(const std::vector<std::pair<double, double>>& points) {
  PowerFit f;
  std::vector<std::pair<double, double>> logs;
  for (const auto& [x, y] : points)
    if (x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y)) logs.emplace_back(std::log(x), std::log(y));
  const double n = static_cast<double>(logs.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : logs) sx += x, sy += y, sxx += x * x, sxy += x * y;
  const double den = n * sxx - sx * sx;
  if (logs.size() < 2 || !(den > 1e-12)) return f;
  f.exponent = (n * sxy - sx * sy) / den;
  const double intercept = (sy - f.exponent * sx) / n;
  f.coefficient = std::exp(intercept);
  for (const auto& [x, y] : logs) f.max_residual = std::max(f.max_residual, std::abs(y - (intercept + f.exponent * x)));
  f.ok = true;
  return f;
}

std::vector<ProblemFinding> problem_findings(const std::string& path, const std::vector<ProblemDraw>& draws) {
  std::vector<Sighting> seen;
  ProblemWide wide;
  draw_sightings(draws, seen, wide);
  problem_wide_sightings(seen, wide);
  return merge_sightings(path, draws, seen, wide.allow);
}

namespace {

struct Target {
  fs::path path;
  int level = 0;
  int id = 0;
  std::string name;
};

// Lints one problem with a reference worker from `host`.
json lint_one(const Target& t, const ProblemLintOptions& opt, ReferenceHost& host) {
  std::string shown = t.path.string();
  json row = {{"path", shown}, {"level", t.level}, {"id", t.id}, {"name", t.name}};
  std::vector<ProblemDraw> draws;
  json stats = json::object();
  SeedSource seeds(opt.seed);
  const Protocol& p = opt.eval.protocol;
  auto timeout = std::chrono::milliseconds(static_cast<long long>(opt.eval.timeouts.reference_s * 1000));
  for (const auto& d : p.distributions) {
    uint64_t a = seeds.next(), b = seeds.next();
    ProblemDraw draw{d, json(), ""};
    msg::LoadProblemReply load;
    FailureKind failure;
    WorkerProcess* w = host.get(t.path, opt.eval, load, failure);
    if (w && !load.sizes.empty()) {
      row["sizes"] = load.sizes;
      row["overrides"] = load.overrides;
    }
    if (!w) {
      draw.distribution = Distribution{"", 1.0};  // loading does not depend on the distribution
      draw.failure = failure.message;
      draws.push_back(draw);
      break;
    }
    Reply r = w->call(msg::to_json(msg::LintRequest{{a, b}, d.scale, p.input_draw, p.wire_tolerance()}), timeout);
    if (std::optional<msg::LintReply> linted = reply_as<msg::LintReply>(r)) {
      draw.reply = msg::to_json(*linted);
      stats[d.name] = draw.reply;
    } else {
      draw.failure = r.status == Reply::Status::failed ? msg::failure_of(r.body).message : r.detail;
      if (r.status != Reply::Status::failed) host.reset();
    }
    draws.push_back(draw);
    if (interrupted()) break;
  }
  std::vector<ProblemFinding> findings = problem_findings(shown, draws);
  json fj = json::array();
  for (const auto& f : findings) fj.push_back(f.to_json());
  row["clean"] = problems_clean(findings);
  row["findings"] = fj;
  row["stats"] = stats;
  host.reset();  // one problem per worker: nothing of this problem's module reaches the next
  return row;
}

}  // namespace

ProblemLintResult lint_problems(const ProblemLintOptions& opt, const Notify& notify) {
  std::vector<Target> targets;
  std::error_code ec;
  if (fs::is_regular_file(opt.target, ec)) {
    Target t{opt.target, 0, parse_problem_id(opt.target.filename().string()).value_or(0),
             opt.target.filename().string()};
    std::string parent = opt.target.parent_path().filename().string();
    if (parent.rfind("level", 0) == 0) t.level = std::atoi(parent.c_str() + 5);
    targets.push_back(t);
  } else {
    Discovery d = discover_dataset(opt.target, opt.level);
    if (!d.error.empty()) return {Outcome::fail(Status::input_error, d.error), {}};
    for (const auto& w : d.warnings) warn(notify, w);
    for (const auto& p : d.problems) targets.push_back({p.path, p.level, p.id, p.name});
  }
  if (targets.empty()) return {Outcome::fail(Status::input_error, opt.target.string() + ": no problem files found"), {}};
  EvalOptions eval = opt.eval;
  std::unique_ptr<WorkerProcess> idle;
  std::string error;
  std::optional<Environment> env = probe_environment(eval, error, &idle);
  if (!env) return {Outcome::fail(Status::input_error, error), {}};
  eval.device = env->device;
  eval.cpu = resolve_cpu_budget(eval);
  ProblemLintOptions o = opt;
  o.eval = eval;

  std::vector<json> rows(targets.size());
  std::vector<bool> done(targets.size(), false);
  std::atomic<size_t> next{0};
  std::mutex mu;
  size_t finished = 0;
  std::vector<std::thread> threads;
  int jobs = std::max(1, std::min<int>(opt.jobs, static_cast<int>(targets.size())));
  for (int j = 0; j < jobs; ++j)
    threads.emplace_back([&, j]() {
      ReferenceHost host;
      if (j == 0) host.adopt(std::move(idle));
      for (;;) {
        size_t i = next++;
        if (i >= targets.size() || interrupted()) return;
        json row = lint_one(targets[i], o, host);
        std::lock_guard<std::mutex> lock(mu);
        ++finished;
        int notes = 0, open = 0, allowed = 0;
        for (const auto& f : row["findings"]) {
          if (f["severity"] == "note") ++notes;
          else if (f.contains("allowed")) ++allowed;
          else ++open;
        }
        std::string state = open ? fmt::format("{} finding(s)", open) : "clean";
        if (allowed) state += fmt::format(", {} allowed", allowed);
        if (notes) state += fmt::format(", {} note(s)", notes);
        std::string lines = fmt::format("[{}/{}] {}: {}", finished, targets.size(), row["path"].get<std::string>(), state);
        if (row.contains("sizes")) lines += "\n    sizes " + row["sizes"].get<std::string>();
        for (const auto& f : row["findings"]) {
          std::string tag = f["severity"] == "note" ? "note" : f.contains("allowed") ? "allowed" : "FINDING";
          lines += fmt::format("\n    {} [{}] {}", tag, f["rule"].get<std::string>(), f["message"].get<std::string>());
          if (f.contains("allowed")) lines += "\n        reason: " + f["allowed"].get<std::string>();
        }
        progress(notify, lines);
        rows[i] = std::move(row);
        done[i] = true;
      }
    });
  for (auto& t : threads) t.join();

  json problems = json::array();
  int clean = 0, unclean = 0, with_allowed = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!done[i]) continue;
    bool any_allowed = false;
    for (const auto& f : rows[i]["findings"]) any_allowed = any_allowed || f.contains("allowed");
    if (rows[i]["clean"].get<bool>()) ++clean;
    else ++unclean;
    if (any_allowed) ++with_allowed;
    problems.push_back(std::move(rows[i]));
  }
  const Protocol& p = eval.protocol;
  progress(notify, fmt::format("{} problem(s) linted on {}: {} clean ({} of them with allowed findings), {} with "
                               "findings{}",
                               problems.size(), env->device_name, clean, with_allowed, unclean,
                               problems.size() < targets.size() ? " (interrupted)" : ""));
  json distributions = json::array();
  for (const auto& d : p.distributions) distributions.push_back({{"name", d.name}, {"scale", d.scale}});
  ProblemLintResult result;
  result.report = json{{"device", env->device},
              {"device_name", env->device_name},
              {"protocol", p.name},
              {"precision", p.precision},
              {"tolerance", {{"atol", p.atol}, {"rtol", p.rtol}, {"rel_l2", p.rel_l2}, {"use_rel_l2", p.use_rel_l2}}},
              {"distributions", distributions},
              {"seed", opt.seed},
              {"problems", problems},
              {"summary",
               {{"problems", problems.size()},
                {"clean", clean},
                {"with_findings", unclean},
                {"with_allowed_findings", with_allowed},
                {"complete", problems.size() == targets.size()}}}};
  if (interrupted()) result.outcome = Outcome::fail(Status::interrupted, "");
  else if (unclean > 0) result.outcome = Outcome::fail(Status::incomplete, "");
  return result;
}

}  // namespace kbv
