#include "check/runtime_audit.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "record/finding.h"

namespace kbv {
using nlohmann::json;

namespace {

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

bool library_scope(std::string_view qualified) {
  for (std::string_view p : {"pybind11::", "at::", "c10::", "torch::", "std::", "__gnu_cxx::", "caffe2::",
                             "Py", "_Py", "_GLOBAL__sub_I_"})
    if (qualified.substr(0, p.size()) == p) return true;
  return false;
}

// The qualified name ending right before position `end` (exclusive) of `d`: identifiers, `::`
// and balanced template argument lists, walking backwards.
std::string owner_before(const std::string& d, size_t end) {
  size_t i = end;
  while (i > 0) {
    char c = d[i - 1];
    if (c == '>') {
      int depth = 0;
      while (i > 0) {
        char x = d[i - 1];
        if (x == '>') ++depth;
        if (x == '<') --depth;
        --i;
        if (depth == 0) break;
      }
      continue;
    }
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '~') {
      --i;
      continue;
    }
    break;
  }
  return d.substr(i, end - i);
}

// The function's own qualified name: what precedes its parameter list, without a return type.
std::string function_name(const std::string& d) {
  int depth = 0;
  size_t last_space = std::string::npos;
  for (size_t i = 0; i < d.size(); ++i) {
    char c = d[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (depth == 0 && c == ' ') last_space = i;
    if (depth == 0 && c == '(') {
      size_t start = last_space == std::string::npos ? 0 : last_space + 1;
      return d.substr(start, i - start);
    }
  }
  return d;
}

// The file name of a sampled object's path ("/usr/lib/libm.so.6" -> "libm.so.6").
std::string object_base(const std::string& object) {
  const size_t slash = object.find_last_of('/');
  return object.substr(slash == std::string::npos ? 0 : slash + 1);
}

}  // namespace

bool is_glue_symbol(const std::string& name) {
  if (name == "(PLT or padding)") return true;  // the worker's name for an address between functions
  std::string d = demangle(name);
  if (!library_scope(function_name(d))) return false;
  // A local entity (lambda, local struct) of a function outside the library namespaces shows
  // as "owner(args)::..." anywhere in the name: that is the candidate's code instantiated
  // inside a library template (at::parallel_for's body, std::thread's callable).
  for (size_t pos = d.find(")::"); pos != std::string::npos; pos = d.find(")::", pos + 3)) {
    int depth = 0;
    size_t open = pos;
    for (size_t i = pos + 1; i-- > 0;) {
      if (d[i] == ')') ++depth;
      if (d[i] == '(') --depth;
      if (depth == 0) {
        open = i;
        break;
      }
    }
    std::string owner = owner_before(d, open);
    if (!owner.empty() && !library_scope(owner)) return false;
  }
  return true;
}

SampleKind sample_kind(const json& group) {
  const std::string base = object_base(group.value("object", "?"));
  // The C math library does the work of whoever calls it (an own loop's expf/log1p, as much as
  // a library's); the sampled PC does not say which, so it counts for neither side.
  if (base.rfind("libm.so", 0) == 0 || base.rfind("libm-", 0) == 0 || base.rfind("libmvec.so", 0) == 0)
    return SampleKind::math;
  if (!group.value("own_object", false)) return SampleKind::library;
  std::string symbol = group.value("symbol", "");
  return !symbol.empty() && is_glue_symbol(symbol) ? SampleKind::glue : SampleKind::own;
}

OwnSamples own_samples(const json& groups) {
  OwnSamples s;
  if (!groups.is_array()) return s;
  for (const auto& g : groups) {
    int64_t n = g.value("count", int64_t{0});
    if (n <= 0) continue;
    SampleKind k = sample_kind(g);
    if (k == SampleKind::math) continue;
    s.counted += n;
    if (k == SampleKind::own) s.own += n;
  }
  return s;
}

ShareCall call_own_share(int64_t own, int64_t counted, double min_share) {
  if (counted <= 0 || own < 0 || own > counted) return ShareCall::undecided;
  const double n = static_cast<double>(counted), p = static_cast<double>(own) / n, z2 = kShareZ * kShareZ;
  const double center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half = kShareZ * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
  if (center - half > min_share) return ShareCall::above;
  if (center + half < min_share && counted >= kMinComputeSamples) return ShareCall::below;
  return ShareCall::undecided;
}

json cpu_compute(const json& observation) {
  if (!observation.is_object() || observation.value("method", "") != "cpu-sampling") {
    json j = {{"method", "not_measured"},
              {"reason", observation.is_object() ? observation.value("reason", "no observation")
                                                 : std::string("no observation")}};
    return j;
  }
  int calls = std::max(1, observation.value("calls", 1));
  double cpu_ms = observation.value("cpu_ms", 0.0);
  std::map<std::string, int64_t> own, library, math;
  int64_t all = 0, total = 0, own_total = 0;
  for (const auto& s : observation.value("samples", json::array())) {
    int64_t n = s.value("count", int64_t{0});
    if (n <= 0) continue;
    all += n;
    const std::string base = object_base(s.value("object", "?"));
    switch (sample_kind(s)) {
      case SampleKind::math:
        math[base] += n;
        continue;
      case SampleKind::glue:
        library[base + " (extension glue: pybind11, inlined ATen/c10/std)"] += n;
        break;
      case SampleKind::own: {
        std::string symbol = s.value("symbol", "");
        std::string shown = symbol.empty() ? base + " (no symbol)" : demangle(symbol);
        if (shown.size() > 160) shown = shown.substr(0, 157) + "...";
        own[shown] += n;
        own_total += n;
        break;
      }
      case SampleKind::library:
        library[base.empty() ? std::string("(anonymous mapping)") : base] += n;
        break;
    }
    total += n;
  }
  auto top = [&](const std::map<std::string, int64_t>& m) {
    std::vector<std::pair<std::string, int64_t>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    json out = json::array();
    for (size_t i = 0; i < v.size() && i < 20; ++i)
      out.push_back({{"name", v[i].first},
                     {"calls", nullptr},
                     {"samples", v[i].second},
                     {"ms", all > 0 ? cpu_ms / calls * static_cast<double>(v[i].second) / static_cast<double>(all)
                                    : 0.0}});
    return out;
  };
  json j = {{"method", "cpu-sampling"},
            {"own_share", total > 0 ? static_cast<double>(own_total) / static_cast<double>(total) : 0.0},
            {"own", top(own)},
            {"library", top(library)},
            {"samples", total},
            {"math_samples", all - total},
            {"math", top(math)},
            {"calls", calls},
            {"cpu_ms_per_call", cpu_ms / calls},
            {"period_ms", observation.value("period_ms", 0.0)},
            {"scope", observation.value("scope", "forward")}};
  // The own calls' part of the forward's CPU time (a measurement: issue 29).
  const double forward_ms = observation.value("forward_cpu_ms", 0.0);
  if (forward_ms > 0 && observation.contains("own_call_cpu_ms"))
    j["forward_own_share"] = std::min(1.0, observation.value("own_call_cpu_ms", 0.0) / forward_ms);
  if (observation.contains("replay_error")) j["replay_error"] = observation["replay_error"];
  return j;
}

std::string audit_undecided(const json& observation, const json& compute) {
  if (!observation.is_object() || observation.value("method", "") != "cpu-sampling") return "";
  if (std::string d = observation.value("disturbed", ""); !d.empty())
    return "the audit's sampler was disturbed during the audited calls (" + d + ")";
  const double cpu_ms = observation.value("cpu_ms", 0.0);
  const int64_t fired = observation.value("fired", int64_t{-1});
  if (fired >= 0 && cpu_ms >= 200.0 && static_cast<double>(fired) < kMinFiredPerCpuMs * cpu_ms)
    return fmt::format("the audit's sampler fired {} times in {:.0f} ms of CPU time (at least {:.0f} expected): "
                       "it was disarmed or blocked",
                       fired, cpu_ms, kMinFiredPerCpuMs * cpu_ms);
  // All samples, math included (an honest kernel spending its time in expf is not undecided).
  const int64_t samples =
      compute.is_object() ? compute.value("samples", int64_t{0}) + compute.value("math_samples", int64_t{0}) : 0;
  if (samples < kMinComputeSamples)
    return fmt::format("the audit took {} CPU samples of the candidate's calls, fewer than the {} that decide",
                       samples, kMinComputeSamples);
  return "";
}

ReachCall own_reach(const json& ablation) {
  ReachCall r;
  if (!ablation.is_object() || !ablation.value("ran", false)) {
    r.why = ablation.is_object() ? ablation.value("reason", "the ablation did not run") : "the ablation did not run";
    return r;
  }
  std::string functions;
  for (const auto& f : ablation.value("functions", json::array())) {
    if (!functions.empty()) functions += ", ";
    functions += f.is_string() ? f.get<std::string>() : f.dump();
    if (functions.size() > 200) break;
  }
  if (ablation.contains("error")) {
    r.why = "the ablation could not poison the own calls' results: " + ablation.value("error", "");
    return r;
  }
  const int64_t own_calls = ablation.value("own_calls", int64_t{0});
  if (own_calls <= 0) {
    r.reach = Reach::not_reached;
    r.why = fmt::format("none of the candidate's own extension functions ({}) was called during forward", functions);
    return r;
  }
  if (ablation.contains("raised")) {
    r.reach = Reach::reached;
    r.fraction = 1.0;
    r.why = "forward raised when its own functions' results were replaced by wrong values: " +
            ablation.value("raised", "");
    return r;
  }
  const int64_t replaced = ablation.value("outputs_replaced", int64_t{0});
  const int64_t overwritten = ablation.value("elements_overwritten", int64_t{0});
  if (replaced <= 0 && overwritten <= 0) {
    r.reach = Reach::not_reached;
    r.why = fmt::format("the own functions ({}) were called {} time(s) during forward but returned no tensor and "
                        "changed none of their tensor arguments",
                        functions, own_calls);
    return r;
  }
  const json outputs = ablation.value("outputs", json::array());
  int64_t changed = 0, numel = 0;
  for (const auto& o : outputs) {
    const int64_t c = o.value("changed", int64_t{0}), n = o.value("numel", int64_t{0});
    changed += std::max<int64_t>(c, 0);
    numel += std::max<int64_t>(n, 0);
    if (n > 0) r.fraction = std::max(r.fraction, static_cast<double>(std::clamp<int64_t>(c, 0, n)) / static_cast<double>(n));
  }
  if (ablation.contains("outputs_note") || changed > 0) {
    r.reach = Reach::reached;
    if (ablation.contains("outputs_note")) r.fraction = 1.0;
    r.why = fmt::format("{} of {} output element(s) changed beyond tolerance when the {} tensor(s) returned and {} "
                        "element(s) written by {} own call(s) were replaced by wrong values",
                        changed, numel, replaced, overwritten, own_calls);
    return r;
  }
  r.reach = Reach::not_reached;
  r.why = fmt::format("with the {} tensor(s) returned and {} element(s) written by {} call(s) of the own functions "
                      "({}) replaced by wrong finite values, none of the {} output element(s) changed beyond "
                      "tolerance: nothing the candidate's own code computes reaches the output",
                      replaced, overwritten, own_calls, functions, numel);
  return r;
}

bool token_reach(const json& ablation, const ReachCall& reach) {
  if (reach.reach != Reach::reached || !ablation.is_object()) return false;
  if (ablation.contains("raised") || ablation.contains("outputs_note")) return false;
  if (ablation.value("outputs_replaced", int64_t{0}) <= 0 || ablation.value("elements_overwritten", int64_t{0}) != 0)
    return false;
  return reach.fraction < kMinReachFraction;
}

json runtime_findings(const json& audit, const json& reference_aliases, const json& stale_check,
                      const json& compute) {
  json findings = json::array();
  auto add = [&](const std::string& rule, const std::string& severity, const std::string& message,
                 const std::string& evidence, const char* cheat) {
    findings.push_back(make_finding(rule, severity, message, evidence, cheat ? cheat : "").to_json());
  };

  // T11: nothing the candidate's own code computes reaches the output (the ablation; both devices).
  const json ablation = audit.value("ablation", json());
  const ReachCall reach = own_reach(ablation);
  if (reach.reach == Reach::not_reached)
    add("no_custom_compute", "reject", reach.why + ": the work was done by library code",
        "ablation: the model called with its own functions' results replaced by wrong values (audit.ablation)", "T11");
  // T11: own code computes a token slice of the output (both devices; decided on reach, not time).
  const bool token = token_reach(ablation, reach);
  if (token)
    add("no_custom_compute", "reject",
        fmt::format("a token own part: at most {:.3g}% of any output's elements depend on the candidate's own code "
                    "(fewer than {}%), the rest was computed by library code ({})",
                    100.0 * reach.fraction, 100.0 * kMinReachFraction, reach.why),
        "ablation: the model called with its own functions' results replaced by wrong values (audit.ablation)", "T11");
  // T11: (almost) none of the sampled CPU time of the own calls replayed alone, or of the whole
  // forward when there were no own calls to replay, was spent in the candidate's own code.
  if (reach.reach != Reach::not_reached && !token && compute.is_object() &&
      compute.value("method", "") == "cpu-sampling") {
    int64_t samples = compute.value("samples", int64_t{0});
    double share = compute.value("own_share", 0.0);
    const bool own_calls = compute.value("scope", "forward") == "own_calls";
    if (samples >= kMinComputeSamples && share < kMinOwnShare) {
      std::string where;
      for (const auto& l : compute.value("library", json::array())) {
        if (!where.empty()) where += ", ";
        where += fmt::format("{} {:.0f}%", l.value("name", "?"),
                             100.0 * static_cast<double>(l.value("samples", int64_t{0})) / static_cast<double>(samples));
        if (where.size() > 200) break;
      }
      add("no_custom_compute", "reject",
          fmt::format("{:.2f}% of the {} CPU samples of {} {} fell in the candidate's own compiled code (below "
                      "{}%): the work was done by library code ({})",
                      100.0 * share, samples, compute.value("calls", 0),
                      own_calls ? "replay(s) of its own extension calls, alone," : "audited forward call(s)",
                      100.0 * kMinOwnShare, where),
          "CPU sampling of the audited calls (compute.library)", "T11");
    }
  }

  // T2: threads the call started that are still alive, and busy, after it returned.
  std::vector<std::string> busy, idle;
  for (const auto& t : audit.value("threads", json::array())) {
    std::string desc = fmt::format("tid {} '{}' (state {} at return, {:.1f} ms CPU in the next {:.0f} ms{})",
                                   t.value("tid", 0), t.value("name", ""), t.value("state", "?"),
                                   t.value("cpu_ms_after", 0.0), t.value("window_ms", 0.0),
                                   t.value("exited", false) ? ", then exited" : "");
    bool running = t.value("cpu_ms_after", 0.0) >= 1.0 || t.value("state", "") == "R";
    (running ? busy : idle).push_back(desc);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!busy.empty())
    add("threads_alive", "reject",
        fmt::format("{} thread(s) started by forward were still running after it returned: work finishing after "
                    "return is not the call's work, and escapes its timing",
                    busy.size()),
        join(busy), "T2");
  else if (!idle.empty())
    add("threads_alive", "warn",
        fmt::format("{} thread(s) started by forward are alive but idle after it returned (a pool the candidate "
                    "keeps, it did no work after the return)",
                    idle.size()),
        join(idle), "T2");

  // T3: an output sharing storage with an input, where the reference's output does not.
  std::vector<std::string> aliased;
  for (const auto& a : audit.value("aliases", json::array())) {
    bool reference_too = false;
    for (const auto& r : reference_aliases.is_array() ? reference_aliases : json::array())
      if (r.value("output", -1) == a.value("output", -2) && r.value("input", -1) == a.value("input", -2))
        reference_too = true;
    if (!reference_too) aliased.push_back(fmt::format("output {} and input {}", a.value("output", 0), a.value("input", 0)));
  }
  if (!aliased.empty())
    add("output_aliases_input", "reject",
        fmt::format("the output shares storage with an input ({}) where the reference's does not: an output must "
                    "be a tensor of its own",
                    join(aliased)),
        "data pointers of the audited call's outputs and inputs", "T3");

  // T16: the same input values in fresh buffers, with poisoned free memory, give other outputs.
  std::vector<std::string> differ;
  for (const auto& d : audit.value("determinism", json::array()))
    if (!d.value("passed", true))
      differ.push_back(fmt::format("output {}: {}", d.value("output", 0), d.value("reason", "")));
  if (audit.contains("determinism_note")) differ.push_back(audit["determinism_note"].get<std::string>());
  if (!differ.empty())
    add("nondeterministic", "reject",
        "the same input values in fresh buffers (free memory and new torch allocations filled with NaN) gave different "
        "outputs: the kernel reads memory it did not write, or races",
        join(differ), "T16");

  // T5: same storage, new values, and the output is not the new values' output.
  if (stale_check.is_object() && !stale_check.value("passed", true)) {
    std::string previous;
    for (const auto& p : audit.value("same_as_previous", json::array()))
      if (p.value("equal", false)) previous += fmt::format(" output {} is bitwise the previous call's.", p.value("output", 0));
    add("stale_output", "reject",
        fmt::format("after the input buffers were overwritten in place with a new draw (same pointers, same shapes), "
                    "the output no longer matches the reference: {}.{}",
                    stale_check.value("reason", ""), previous),
        "same-storage call of the runtime audit", "T5");
  }
  return findings;
}

}  // namespace kbv
