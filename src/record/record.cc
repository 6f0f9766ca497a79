// The record's JSON, both ways (record.h). Each key is spelled here and nowhere else.
#include "record/record.h"

#include <array>
#include <cmath>
#include <utility>

namespace kbv {
using nlohmann::json;

namespace {

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
bool fits(const json& v, const std::vector<std::string>*) {
  if (!v.is_array()) return false;
  for (const auto& x : v)
    if (!x.is_string()) return false;
  return true;
}

template <class T>
T convert(const json& v) {
  if constexpr (std::is_same_v<T, json>) return v;
  else return v.get<T>();
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

// A nested object part: parsed when the key holds an object.
template <class T, class Parse>
void take_part(Unknown& u, const char* key, std::optional<T>& out, Parse parse) {
  auto it = u.extra.find(key);
  if (it == u.extra.end() || !it->is_object()) return;
  out = parse(*it);
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

template <class T>
void put(json& j, const Unknown& u, const char* key, const T& value) {
  if (u.absent.count(key)) return;
  if constexpr (std::is_same_v<T, double>) j[key] = number(u, key, value);
  else j[key] = value;
}
template <class T>
void put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}
void put(json& j, const Unknown& u, const char* key, const std::optional<double>& value) {
  if (value) j[key] = number(u, key, *value);
}

// ---- the keys ------------------------------------------------------------------------------------

namespace k {
constexpr const char* level = "level";
constexpr const char* problem_id = "problem_id";
constexpr const char* sample_id = "sample_id";
constexpr const char* problem = "problem";
constexpr const char* solution = "solution";
constexpr const char* solution_hash = "solution_hash";
constexpr const char* source_origin = "source_origin";
constexpr const char* precision = "precision";
constexpr const char* compiled = "compiled";
constexpr const char* correctness = "correctness";
constexpr const char* verdict = "verdict";
constexpr const char* message = "message";
constexpr const char* findings = "findings";
constexpr const char* distributions = "distributions";
constexpr const char* reference_error = "reference_error";
constexpr const char* traceback = "traceback";
constexpr const char* problem_overrides = "problem_overrides";
constexpr const char* metadata = "metadata";
constexpr const char* runtime = "runtime";
constexpr const char* runtime_stats = "runtime_stats";
constexpr const char* timing = "timing";
constexpr const char* memory = "memory";
constexpr const char* compute = "compute";
constexpr const char* audit = "audit";
constexpr const char* sandbox = "sandbox";
constexpr const char* build = "build";
constexpr const char* seconds = "seconds";
constexpr const char* phase_seconds = "phase_seconds";
constexpr const char* protocol = "protocol";
constexpr const char* kernelbench = "kernelbench";
}  // namespace k

// ---- parts ---------------------------------------------------------------------------------------

TrialResult trial_from_json(const json& j) {
  TrialResult t;
  t.unknown = start(j);
  Unknown& u = t.unknown;
  take(u, "trial", t.trial);
  take(u, "distribution", t.distribution);
  take(u, "scale", t.scale);
  take(u, "seed", t.seed);
  take(u, "passed", t.passed);
  take(u, "reason", t.reason);
  take(u, "comparisons", t.comparisons);
  take(u, "mutated_inputs", t.mutated_inputs);
  take(u, k::reference_error, t.reference_error);
  return t;
}

json to_json(const TrialResult& t) {
  json j = begin(t.unknown);
  put(j, t.unknown, "trial", t.trial);
  put(j, t.unknown, "distribution", t.distribution);
  put(j, t.unknown, "scale", t.scale);
  put(j, "seed", t.seed);
  put(j, "passed", t.passed);
  put(j, "reason", t.reason);
  put(j, "comparisons", t.comparisons);
  put(j, "mutated_inputs", t.mutated_inputs);
  put(j, k::reference_error, t.reference_error);
  return j;
}

// The metadata's typed keys, in one list for both directions.
template <class M, class F>
void metadata_fields(M& m, F&& f) {
  f("hardware", m.hardware);
  f("device", m.device);
  f("correctness_trials", m.correctness_trials);
  f("compilation_error", m.compilation_error);
  f("runtime_error", m.runtime_error);
  f("correctness_issue", m.correctness_issue);
  f("problem_error", m.problem_error);
  f("needs_cuda", m.needs_cuda);
  f("dtype_fallback", m.dtype_fallback);
}

}  // namespace

Metadata metadata_from_json(const json& j) {
  Metadata m;
  m.unknown = start(j);
  metadata_fields(m, [&](const char* key, auto& field) { take(m.unknown, key, field); });
  return m;
}

json to_json(const Metadata& m) {
  json j = begin(m.unknown);
  metadata_fields(m, [&](const char* key, const auto& field) { put(j, key, field); });
  return j;
}


RecordProtocol protocol_from_json(const json& j) {
  RecordProtocol p;
  p.unknown = start(j);
  Unknown& u = p.unknown;
  take(u, "name", p.name);
  take(u, "trials", p.trials);
  if (auto it = u.extra.find("distributions"); it != u.extra.end() && it->is_array()) {
    std::vector<RecordProtocol::Dist> list;
    bool ok = true;
    for (const auto& d : *it) {
      if (!d.is_object() || d.size() != 2 || !d.contains("name") || !d["name"].is_string() || !d.contains("scale")) {
        ok = false;
        break;
      }
      list.push_back({d["name"].get<std::string>(), d["scale"]});
    }
    if (ok) {
      p.distributions = std::move(list);
      u.extra.erase(it);
    }
  }
  take(u, k::precision, p.precision);
  take(u, "device_name", p.device_name);
  take(u, "torch_version", p.torch_version);
  take(u, "python_version", p.python_version);
  take(u, "kbv_version", p.kbv_version);
  return p;
}

namespace {

json to_json(const RecordProtocol& p) {
  json j = begin(p.unknown);
  put(j, "name", p.name);
  put(j, "trials", p.trials);
  if (p.distributions) {
    json list = json::array();
    for (const auto& d : *p.distributions) list.push_back({{"name", d.name}, {"scale", d.scale}});
    j["distributions"] = list;
  }
  put(j, k::precision, p.precision);
  put(j, "device_name", p.device_name);
  put(j, "torch_version", p.torch_version);
  put(j, "python_version", p.python_version);
  put(j, "kbv_version", p.kbv_version);
  return j;
}

TimedStats stats_from_json(const json& j) {
  TimedStats s;
  s.unknown = start(j);
  take(s.unknown, "median_ms", s.median_ms);
  take(s.unknown, "mean_ms", s.mean_ms);
  take(s.unknown, "rse", s.rse);
  take(s.unknown, "samples", s.samples);
  return s;
}

json to_json(const TimedStats& s) {
  json j = begin(s.unknown);
  put(j, s.unknown, "median_ms", s.median_ms);
  put(j, s.unknown, "mean_ms", s.mean_ms);
  put(j, s.unknown, "rse", s.rse);
  put(j, "samples", s.samples);
  return j;
}

Memory::Side side_from_json(const json& j) {
  Memory::Side s;
  s.unknown = start(j);
  take(s.unknown, "peak_bytes", s.peak_bytes);
  return s;
}

json to_json(const Memory::Side& s) {
  json j = begin(s.unknown);
  put(j, s.unknown, "peak_bytes", s.peak_bytes);
  return j;
}

json to_json(const Memory& m) {
  json j = begin(m.unknown);
  put(j, "measured", m.measured);
  put(j, "method", m.method);
  put(j, "reason", m.reason);
  if (m.candidate) j["candidate"] = to_json(*m.candidate);
  put(j, "baselines", m.baselines);
  put(j, "ratio", m.ratio);
  return j;
}

BuildInfo build_from_json(const json& j) {
  BuildInfo b;
  b.unknown = start(j);
  take(b.unknown, k::seconds, b.seconds);
  take(b.unknown, "cached", b.cached);
  take(b.unknown, "diagnostics", b.diagnostics);
  return b;
}

json to_json(const BuildInfo& b) {
  json j = begin(b.unknown);
  put(j, b.unknown, k::seconds, b.seconds);
  put(j, b.unknown, "cached", b.cached);
  put(j, "diagnostics", b.diagnostics);
  return j;
}

}  // namespace

Imported imported_from_json(const json& j) {
  Imported i;
  i.unknown = start(j);
  Unknown& u = i.unknown;
  take(u, "format", i.format);
  take(u, "key", i.key);
  take(u, "standard_correctness", i.standard_correctness);
  take(u, "hidden_correctness", i.hidden_correctness);
  take(u, "hidden_failed", i.hidden_failed);
  take(u, "hidden_metadata", i.hidden_metadata);
  take(u, "peak_memory", i.peak_memory);
  return i;
}

json to_json(const Imported& i) {
  json j = begin(i.unknown);
  put(j, "format", i.format);
  put(j, "key", i.key);
  put(j, "standard_correctness", i.standard_correctness);
  put(j, "hidden_correctness", i.hidden_correctness);
  put(j, "hidden_failed", i.hidden_failed);
  put(j, "hidden_metadata", i.hidden_metadata);
  put(j, i.unknown, "peak_memory", i.peak_memory);
  return j;
}

namespace {

constexpr std::array<std::pair<Verdict, const char*>, 10> kVerdictNames = {{
    {Verdict::pending, ""},
    {Verdict::correct, "correct"},
    {Verdict::wrong_output, "wrong_output"},
    {Verdict::compile_error, "compile_error"},
    {Verdict::runtime_error, "runtime_error"},
    {Verdict::timeout, "timeout"},
    {Verdict::crashed, "crashed"},
    {Verdict::rejected, "rejected"},
    {Verdict::problem_error, "problem_error"},
    {Verdict::interrupted, "interrupted"},
}};

}  // namespace

// ---- Finding -------------------------------------------------------------------------------------

std::string Finding::evidence_text() const {
  if (!evidence.empty() || file.empty()) return evidence;
  std::string e = file + ":" + std::to_string(line);
  if (!code.empty()) e += ": " + code;
  return e;
}

json Finding::to_json() const {
  const Unknown& u = unknown;
  json j = begin(u);
  put(j, u, "rule", rule);
  put(j, u, "severity", severity);
  put(j, u, "message", message);
  put(j, u, "evidence", evidence_text());
  put(j, u, "cheat", cheat.empty() ? json(nullptr) : json(cheat));
  return j;
}

Finding Finding::from_json(const json& j) {
  Finding f;
  f.unknown = start(j);
  Unknown& u = f.unknown;
  take(u, "rule", f.rule);
  take(u, "severity", f.severity);
  take(u, "message", f.message);
  take(u, "evidence", f.evidence);
  if (auto it = u.extra.find("cheat"); it != u.extra.end() && (it->is_string() || it->is_null())) {
    f.cheat = it->is_string() ? it->get<std::string>() : "";
    u.extra.erase(it);
  } else {
    u.absent.insert("cheat");
  }
  return f;
}

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

// ---- Timing and Memory ---------------------------------------------------------------------------

Timing timing_from_json(const json& j) {
  Timing t;
  t.unknown = start(j);
  Unknown& u = t.unknown;
  take(u, "method", t.method);
  take(u, "error", t.error);
  take_part(u, "candidate", t.candidate, stats_from_json);
  take(u, "baselines", t.baselines);
  take(u, "speedup", t.speedup);
  take(u, "speed_of_light", t.speed_of_light);
  return t;
}

json to_json(const Timing& t) {
  json j = begin(t.unknown);
  put(j, "method", t.method);
  put(j, "error", t.error);
  if (t.candidate) j["candidate"] = to_json(*t.candidate);
  put(j, "baselines", t.baselines);
  put(j, "speedup", t.speedup);
  put(j, t.unknown, "speed_of_light", t.speed_of_light);
  return j;
}

Memory memory_from_json(const json& j) {
  Memory m;
  m.unknown = start(j);
  Unknown& u = m.unknown;
  take(u, "measured", m.measured);
  take(u, "method", m.method);
  take(u, "reason", m.reason);
  take_part(u, "candidate", m.candidate, side_from_json);
  take(u, "baselines", m.baselines);
  take(u, "ratio", m.ratio);
  return m;
}

// ---- Record --------------------------------------------------------------------------------------

std::string Record::precision_or_default() const {
  if (precision) return *precision;
  if (protocol.precision) return *protocol.precision;
  return "fp32";
}

RecordRead record_from_json(const json& j) {
  RecordRead out;
  if (!j.is_object()) {
    out.error = std::string("a record is a JSON object; got ") + j.type_name();
    return out;
  }
  Record& r = out.record;
  r.unknown = start(j);
  Unknown& u = r.unknown;
  take(u, k::level, r.level);
  take(u, k::problem_id, r.problem_id);
  take(u, k::sample_id, r.sample_id);
  take(u, k::problem, r.problem);
  take(u, k::solution, r.solution);
  take(u, k::solution_hash, r.solution_hash);
  take(u, k::source_origin, r.source_origin);
  take(u, k::precision, r.precision);
  take(u, k::compiled, r.compiled);
  take(u, k::correctness, r.correctness);
  if (auto it = u.extra.find(k::verdict); it != u.extra.end() && it->is_string() && parse_verdict(it->get<std::string>())) {
    r.verdict = *parse_verdict(it->get<std::string>());
    u.extra.erase(it);
  } else {
    u.absent.insert(k::verdict);
  }
  take(u, k::message, r.message);
  if (auto it = u.extra.find(k::findings); it != u.extra.end() && it->is_array()) {
    bool objects = true;
    for (const auto& f : *it) objects = objects && f.is_object();
    if (objects) {
      for (const auto& f : *it) r.findings.push_back(Finding::from_json(f));
      u.extra.erase(it);
    } else {
      u.absent.insert(k::findings);
    }
  } else {
    u.absent.insert(k::findings);
  }
  if (auto it = u.extra.find(k::distributions); it != u.extra.end() && it->is_array()) {
    bool objects = true;
    for (const auto& d : *it) objects = objects && d.is_object();
    if (objects) {
      for (const auto& d : *it) r.distributions.push_back(trial_from_json(d));
      u.extra.erase(it);
    } else {
      u.absent.insert(k::distributions);
    }
  } else {
    u.absent.insert(k::distributions);
  }
  take(u, k::reference_error, r.reference_error);
  take(u, k::traceback, r.traceback);
  take(u, k::problem_overrides, r.problem_overrides);
  if (auto it = u.extra.find(k::metadata); it != u.extra.end() && it->is_object()) {
    r.metadata = metadata_from_json(*it);
    u.extra.erase(it);
  } else {
    u.absent.insert(k::metadata);
  }
  take(u, k::runtime, r.runtime);
  if (auto it = u.extra.find(k::runtime_stats); it != u.extra.end() && it->is_object()) {
    r.runtime_stats = *it;
    u.extra.erase(it);
  } else {
    u.absent.insert(k::runtime_stats);
  }
  take_part(u, k::timing, r.timing, timing_from_json);
  take_part(u, k::memory, r.memory, memory_from_json);
  take(u, k::compute, r.compute);
  take(u, k::audit, r.audit);
  take(u, k::sandbox, r.sandbox);
  take_part(u, k::build, r.build, build_from_json);
  take(u, k::seconds, r.seconds);
  take(u, k::phase_seconds, r.phase_seconds);
  if (auto it = u.extra.find(k::protocol); it != u.extra.end() && it->is_object()) {
    r.protocol = protocol_from_json(*it);
    u.extra.erase(it);
  } else {
    u.absent.insert(k::protocol);
  }
  take_part(u, k::kernelbench, r.kernelbench, imported_from_json);
  return out;
}

json to_json(const Record& r) {
  const Unknown& u = r.unknown;
  json j = begin(u);
  put(j, u, k::level, r.level);
  put(j, u, k::problem_id, r.problem_id);
  put(j, u, k::sample_id, r.sample_id);
  put(j, u, k::problem, r.problem);
  put(j, u, k::solution, r.solution);
  put(j, k::solution_hash, r.solution_hash);
  put(j, k::source_origin, r.source_origin);
  put(j, k::precision, r.precision);
  put(j, u, k::compiled, r.compiled);
  put(j, u, k::correctness, r.correctness);
  put(j, u, k::verdict, verdict_name(r.verdict));
  put(j, u, k::message, r.message);
  if (!u.absent.count(k::findings)) {
    json list = json::array();
    for (const auto& f : r.findings) list.push_back(f.to_json());
    j[k::findings] = list;
  }
  if (!u.absent.count(k::distributions)) {
    json list = json::array();
    for (const auto& d : r.distributions) list.push_back(to_json(d));
    j[k::distributions] = list;
  }
  put(j, k::reference_error, r.reference_error);
  put(j, k::traceback, r.traceback);
  put(j, k::problem_overrides, r.problem_overrides);
  if (!u.absent.count(k::metadata)) j[k::metadata] = to_json(r.metadata);
  put(j, u, k::runtime, r.runtime);
  put(j, u, k::runtime_stats, r.runtime_stats);
  if (r.timing) j[k::timing] = to_json(*r.timing);
  if (r.memory) j[k::memory] = to_json(*r.memory);
  put(j, k::compute, r.compute);
  put(j, k::audit, r.audit);
  put(j, k::sandbox, r.sandbox);
  if (r.build) j[k::build] = to_json(*r.build);
  put(j, u, k::seconds, r.seconds);
  put(j, k::phase_seconds, r.phase_seconds);
  if (!u.absent.count(k::protocol)) j[k::protocol] = to_json(r.protocol);
  if (r.kernelbench) j[k::kernelbench] = to_json(*r.kernelbench);
  return j;
}

}  // namespace kbv
