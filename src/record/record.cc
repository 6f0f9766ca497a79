// The record's JSON, both ways (record.h). Each part's keys are listed once, in its fields()
// below, which a Reader (JSON -> struct) and a Writer (struct -> JSON) both walk: a key is
// spelled once and serves both directions.
#include "record/record.h"

#include <array>
#include <cmath>
#include <type_traits>
#include <utility>

namespace kbv {
using nlohmann::json;

namespace {

constexpr std::array<std::pair<Verdict, const char*>, 12> kVerdictNames = {{
    {Verdict::pending, ""},
    {Verdict::correct, "correct"},
    {Verdict::wrong_output, "wrong_output"},
    {Verdict::flaky, "flaky"},
    {Verdict::compile_error, "compile_error"},
    {Verdict::runtime_error, "runtime_error"},
    {Verdict::timeout, "timeout"},
    {Verdict::crashed, "crashed"},
    {Verdict::rejected, "rejected"},
    {Verdict::problem_error, "problem_error"},
    {Verdict::interrupted, "interrupted"},
    {Verdict::harness_error, "harness_error"},
}};

using Dists = std::vector<RecordProtocol::Dist>;

// ---- reading: take a key out of `u.extra` into a typed field when its type fits ----------------

bool fits(const json& v, const int*) { return v.is_number_integer(); }
bool fits(const json& v, const uint64_t*) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }
bool fits(const json& v, const double*) { return v.is_number(); }
bool fits(const json& v, const bool*) { return v.is_boolean(); }
bool fits(const json& v, const std::string*) { return v.is_string(); }
bool fits(const json&, const json*) { return true; }
bool fits(const json& v, const std::map<std::string, double>*) {
  if (!v.is_object()) return false;
  for (const auto& [k, x] : v.items())
    if (!x.is_number()) return false;
  return true;
}
using Intervals = std::map<std::string, std::vector<double>>;
bool fits(const json& v, const Intervals*) {
  if (!v.is_object()) return false;
  for (const auto& [k, x] : v.items())
    if (!x.is_array() || x.size() != 2 || !x[0].is_number() || !x[1].is_number()) return false;
  return true;
}
bool fits(const json& v, const Verdict*) { return v.is_string() && parse_verdict(v.get<std::string>()); }
// The protocol's distributions: a list of {"name": string, "scale": anything}, nothing else.
bool fits(const json& v, const Dists*) {
  if (!v.is_array()) return false;
  for (const auto& d : v)
    if (!d.is_object() || d.size() != 2 || !d.contains("name") || !d["name"].is_string() || !d.contains("scale"))
      return false;
  return true;
}
bool fits(const json& v, const std::vector<std::string>*) {
  if (!v.is_array()) return false;
  for (const auto& x : v)
    if (!x.is_string()) return false;
  return true;
}

template <class T>
T convert(const json& v) {
  if constexpr (std::is_same_v<T, json>) {
    return v;
  } else if constexpr (std::is_same_v<T, Verdict>) {
    return *parse_verdict(v.get<std::string>());
  } else if constexpr (std::is_same_v<T, Dists>) {
    Dists list;
    for (const auto& d : v) list.push_back({d["name"].get<std::string>(), d["scale"]});
    return list;
  } else {
    return v.get<T>();
  }
}

// An optional key: set when present with a fitting type (else left in extra, verbatim).
template <class T>
void take(Unknown& u, const char* key, std::optional<T>& out) {
  auto it = u.extra.find(key);
  if (it == u.extra.end() || !fits(*it, static_cast<const T*>(nullptr))) return;
  if constexpr (std::is_same_v<T, double>)
    if (it->is_number_integer()) u.integers.insert(key);
  out = convert<T>(*it);
  u.extra.erase(it);
}

// An always-written key: absent (or of another type) -> remembered in `absent`.
template <class T>
void take(Unknown& u, const char* key, T& out) {
  auto it = u.extra.find(key);
  if (it == u.extra.end() || !fits(*it, static_cast<const T*>(nullptr))) {
    u.absent.insert(key);
    return;
  }
  if constexpr (std::is_same_v<T, double>)
    if (it->is_number_integer()) u.integers.insert(key);
  out = convert<T>(*it);
  u.extra.erase(it);
}

Unknown start(const json& j) {
  Unknown u;
  if (j.is_object()) u.extra = j;
  return u;
}

// ---- writing -----------------------------------------------------------------------------------

json begin(const Unknown& u) { return u.extra.is_object() ? u.extra : json::object(); }

// A number read as a JSON integer goes back as one while it is whole.
json number(const Unknown& u, const char* key, double v) {
  if (u.integers.count(key) && std::floor(v) == v && std::fabs(v) < 9.0e18) return json(static_cast<int64_t>(v));
  return json(v);
}


// ---- the two visitors ------------------------------------------------------------------------------
// fields(v, part) calls, per key:
//   v.opt(key, std::optional<T>&)     a key written only when set
//   v.always(key, T&)                 a key always written (one an older record lacks stays out)
//   v.part(key, std::optional<P>&)    an optional nested object with its own fields()
//   v.always_part(key, P&)            an always-written nested object
//   v.list(key, std::vector<P>&)      an always-written list of nested objects
//   v.object(key, json&)              an always-written object passed through
//   v.nullable(key, std::string&)     an always-written string, null when empty

template <class P> P read_part(const json& j);
template <class P> json write_part(const P& p);

struct Reader {
  Unknown& u;
  template <class T> void opt(const char* key, std::optional<T>& out) { take(u, key, out); }
  template <class T> void always(const char* key, T& out) { take(u, key, out); }
  template <class P> void part(const char* key, std::optional<P>& out) {
    auto it = u.extra.find(key);
    if (it == u.extra.end() || !it->is_object()) return;
    out = read_part<P>(*it);
    u.extra.erase(it);
  }
  template <class P> void always_part(const char* key, P& out) {
    auto it = u.extra.find(key);
    if (it == u.extra.end() || !it->is_object()) {
      u.absent.insert(key);
      return;
    }
    out = read_part<P>(*it);
    u.extra.erase(it);
  }
  template <class P> void list(const char* key, std::vector<P>& out) {
    auto it = u.extra.find(key);
    bool objects = it != u.extra.end() && it->is_array();
    if (objects)
      for (const auto& x : *it) objects = objects && x.is_object();
    if (!objects) {
      u.absent.insert(key);
      return;
    }
    for (const auto& x : *it) out.push_back(read_part<P>(x));
    u.extra.erase(it);
  }
  void object(const char* key, json& out) {
    auto it = u.extra.find(key);
    if (it == u.extra.end() || !it->is_object()) {
      u.absent.insert(key);
      return;
    }
    out = *it;
    u.extra.erase(it);
  }
  void nullable(const char* key, std::string& out) {
    auto it = u.extra.find(key);
    if (it == u.extra.end() || !(it->is_string() || it->is_null())) {
      u.absent.insert(key);
      return;
    }
    out = it->is_string() ? it->get<std::string>() : "";
    u.extra.erase(it);
  }
};

struct Writer {
  json& j;
  const Unknown& u;
  template <class T> json value(const char* key, const T& v) const {
    if constexpr (std::is_same_v<T, double>) {
      return number(u, key, v);
    } else if constexpr (std::is_same_v<T, Verdict>) {
      return verdict_name(v);
    } else if constexpr (std::is_same_v<T, Dists>) {
      json list = json::array();
      for (const auto& d : v) list.push_back({{"name", d.name}, {"scale", d.scale}});
      return list;
    } else {
      return json(v);
    }
  }
  bool skip(const char* key) const { return u.absent.count(key) > 0; }
  template <class T> void opt(const char* key, const std::optional<T>& v) {
    if (v) j[key] = value(key, *v);
  }
  template <class T> void always(const char* key, const T& v) {
    if (!skip(key)) j[key] = value(key, v);
  }
  template <class P> void part(const char* key, const std::optional<P>& p) {
    if (p) j[key] = write_part(*p);
  }
  template <class P> void always_part(const char* key, const P& p) {
    if (!skip(key)) j[key] = write_part(p);
  }
  template <class P> void list(const char* key, const std::vector<P>& items) {
    if (skip(key)) return;
    json list = json::array();
    for (const auto& x : items) list.push_back(write_part(x));
    j[key] = list;
  }
  void object(const char* key, const json& v) { always(key, v); }
  void nullable(const char* key, const std::string& s) {
    if (!skip(key)) j[key] = s.empty() ? json(nullptr) : json(s);
  }
};

// ---- the keys: one list per part ---------------------------------------------------------------------

#define KBV_FIELDS(Type) \
  template <class V, class T> requires std::is_same_v<std::remove_const_t<T>, Type> void fields(V& v, T& m)

KBV_FIELDS(Finding) {
  v.always("rule", m.rule);
  v.always("severity", m.severity);
  v.always("message", m.message);
  v.always("evidence", m.evidence);  // written as evidence_text() (Finding::to_json)
  v.nullable("cheat", m.cheat);
}
KBV_FIELDS(TrialResult) {
  v.always("trial", m.trial);
  v.always("distribution", m.distribution);
  v.always("scale", m.scale);
  v.opt("seed", m.seed);
  v.opt("passed", m.passed);
  v.opt("reason", m.reason);
  v.opt("comparisons", m.comparisons);
  v.opt("mutated_inputs", m.mutated_inputs);
  v.opt("reference_error", m.reference_error);
}
KBV_FIELDS(FlakyAttempt) {
  v.always("trial", m.trial);
  v.always("distribution", m.distribution);
  v.always("scale", m.scale);
  v.always("attempt", m.attempt);
  v.opt("reason", m.reason);
}
KBV_FIELDS(Flaky) {
  v.always("reruns", m.reruns);
  v.list("passed", m.passed);
  v.list("failed", m.failed);
}
KBV_FIELDS(Metadata) {
  v.opt("hardware", m.hardware);
  v.opt("device", m.device);
  v.opt("correctness_trials", m.correctness_trials);
  v.opt("compilation_error", m.compilation_error);
  v.opt("runtime_error", m.runtime_error);
  v.opt("correctness_issue", m.correctness_issue);
  v.opt("problem_error", m.problem_error);
  v.opt("needs_cuda", m.needs_cuda);
  v.opt("dtype_fallback", m.dtype_fallback);
}
KBV_FIELDS(RecordProtocol) {
  v.opt("name", m.name);
  v.opt("trials", m.trials);
  v.opt("distributions", m.distributions);
  v.opt("precision", m.precision);
  v.opt("device_name", m.device_name);
  v.opt("torch_version", m.torch_version);
  v.opt("python_version", m.python_version);
  v.opt("kbv_version", m.kbv_version);
}
KBV_FIELDS(TimedStats) {
  v.opt("median_ms", m.median_ms);
  v.opt("mean_ms", m.mean_ms);
  v.opt("rse", m.rse);
  v.opt("samples", m.samples);
}
KBV_FIELDS(Timing) {
  v.opt("method", m.method);
  v.opt("error", m.error);
  v.part("candidate", m.candidate);
  v.opt("baselines", m.baselines);
  v.opt("speedup", m.speedup);
  v.opt("speedup_ci95", m.speedup_ci95);
  v.opt("pairs", m.pairs);
  v.opt("threads", m.threads);
  v.opt("speed_of_light", m.speed_of_light);
}
KBV_FIELDS(Memory::Side) { v.opt("peak_bytes", m.peak_bytes); }
KBV_FIELDS(Memory) {
  v.opt("measured", m.measured);
  v.opt("method", m.method);
  v.opt("reason", m.reason);
  v.part("candidate", m.candidate);
  v.opt("baselines", m.baselines);
  v.opt("ratio", m.ratio);
}
KBV_FIELDS(BuildInfo) {
  v.always("seconds", m.seconds);
  v.always("cached", m.cached);
  v.opt("diagnostics", m.diagnostics);
}
KBV_FIELDS(Imported) {
  v.opt("format", m.format);
  v.opt("key", m.key);
  v.opt("standard_correctness", m.standard_correctness);
  v.opt("hidden_correctness", m.hidden_correctness);
  v.opt("hidden_failed", m.hidden_failed);
  v.opt("hidden_metadata", m.hidden_metadata);
  v.opt("peak_memory", m.peak_memory);
}
KBV_FIELDS(Record) {
  v.always("level", m.level);
  v.always("problem_id", m.problem_id);
  v.always("sample_id", m.sample_id);
  v.always("problem", m.problem);
  v.always("solution", m.solution);
  v.opt("solution_hash", m.solution_hash);
  v.opt("source_origin", m.source_origin);
  v.opt("precision", m.precision);
  v.always("compiled", m.compiled);
  v.always("correctness", m.correctness);
  v.always("verdict", m.verdict);
  v.always("message", m.message);
  v.list("findings", m.findings);
  v.list("distributions", m.distributions);
  v.part("flaky", m.flaky);
  v.opt("reference_error", m.reference_error);
  v.opt("traceback", m.traceback);
  v.opt("problem_overrides", m.problem_overrides);
  v.always_part("metadata", m.metadata);
  v.always("runtime", m.runtime);
  v.object("runtime_stats", m.runtime_stats);
  v.part("timing", m.timing);
  v.part("memory", m.memory);
  v.opt("compute", m.compute);
  v.opt("audit", m.audit);
  v.opt("sandbox", m.sandbox);
  v.part("build", m.build);
  v.opt("seconds", m.seconds);
  v.opt("phase_seconds", m.phase_seconds);
  v.opt("warm_worker", m.warm_worker);
  v.always_part("protocol", m.protocol);
  v.part("kernelbench", m.kernelbench);
}

#undef KBV_FIELDS

template <class P> P read_part(const json& j) {
  P p;
  p.unknown = start(j);
  Reader r{p.unknown};
  fields(r, p);
  return p;
}

template <class P> json write_part(const P& p) {
  json j = begin(p.unknown);
  Writer w{j, p.unknown};
  fields(w, p);
  return j;
}

}  // namespace

// ---- Finding -------------------------------------------------------------------------------------

std::string Finding::evidence_text() const {
  if (!evidence.empty() || file.empty()) return evidence;
  std::string e = file + ":" + std::to_string(line);
  if (!code.empty()) e += ": " + code;
  return e;
}

json Finding::to_json() const {
  Finding shown = *this;
  shown.evidence = evidence_text();
  return write_part(shown);
}

Finding Finding::from_json(const json& j) { return read_part<Finding>(j); }

Finding make_finding(std::string rule, std::string severity, std::string message, std::string evidence,
                     std::string cheat) {
  Finding f;
  f.rule = std::move(rule);
  f.severity = std::move(severity);
  f.message = std::move(message);
  f.evidence = std::move(evidence);
  f.cheat = std::move(cheat);
  return f;
}

json to_json(const Finding& finding) { return finding.to_json(); }

// ---- Verdict -------------------------------------------------------------------------------------

const char* verdict_name(Verdict v) {
  for (const auto& [x, name] : kVerdictNames)
    if (x == v) return name;
  return "";
}

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (const auto& [x, n] : kVerdictNames)
    if (name == n) return x;
  return std::nullopt;
}

// ---- parts and the record ------------------------------------------------------------------------

Metadata metadata_from_json(const json& j) { return read_part<Metadata>(j); }
json to_json(const Metadata& m) { return write_part(m); }
RecordProtocol protocol_from_json(const json& j) { return read_part<RecordProtocol>(j); }
Timing timing_from_json(const json& j) { return read_part<Timing>(j); }
json to_json(const Timing& t) { return write_part(t); }
Memory memory_from_json(const json& j) { return read_part<Memory>(j); }
json to_json(const Imported& i) { return write_part(i); }

std::string Record::precision_or_default() const {
  if (precision) return *precision;
  if (protocol.precision) return *protocol.precision;
  return "fp32";
}

SpeedupCall speedup_call(const Timing& timing, const std::string& baseline) {
  if (!timing.speedup) return SpeedupCall::unknown;
  auto s = timing.speedup->find(baseline);
  if (s == timing.speedup->end() || !(s->second > 0)) return SpeedupCall::unknown;
  if (timing.speedup_ci95)
    if (auto ci = timing.speedup_ci95->find(baseline); ci != timing.speedup_ci95->end() && ci->second.size() == 2) {
      if (ci->second[0] > 1.0) return SpeedupCall::faster;
      if (ci->second[1] < 1.0) return SpeedupCall::slower;
      return SpeedupCall::no_difference;
    }
  return s->second > 1.0 ? SpeedupCall::faster : s->second < 1.0 ? SpeedupCall::slower : SpeedupCall::no_difference;
}

const char* speedup_call_name(SpeedupCall c) {
  switch (c) {
    case SpeedupCall::faster: return "faster";
    case SpeedupCall::slower: return "slower";
    case SpeedupCall::no_difference: return "no measurable difference";
    case SpeedupCall::unknown: break;
  }
  return "unknown";
}

RecordRead record_from_json(const json& j) {
  RecordRead out;
  if (!j.is_object()) {
    out.error = std::string("a record is a JSON object; got ") + j.type_name();
    return out;
  }
  out.record = read_part<Record>(j);
  return out;
}

json to_json(const Record& r) { return write_part(r); }

}  // namespace kbv
