#include "proto/messages.h"

#include <type_traits>

#include <fmt/format.h>

namespace kbv::msg {
namespace {

using nlohmann::json;

constexpr const char* kOpNames[] = {"hello",       "load",         "describe", "kernelbench_seeds", "inputs",
                                    "check",       "release",      "lint",     "time_inputs",       "time",
                                    "time_draw",   "spot_check",   "time_release", "calibrate",     "measure",
                                    "run",         "audit",        "build",    "exit",              "ping",
                                    "draw"};
static_assert(std::size(kOpNames) == static_cast<size_t>(Op::draw) + 1);

template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

// Fields of each message, listed once for writing and reading: v(key, member) for an optional
// field, v.required(key, member) for a required one, v.nested(key, member) for a sub-struct.
template <class V, class T> void fields(V&, T&) requires std::is_empty_v<std::remove_const_t<T>> {}

#define KBV_FIELDS(Type) \
  template <class V, class T> requires std::is_same_v<std::remove_const_t<T>, Type> void fields(V& v, T& m)

KBV_FIELDS(Failure) {
  v.required("kind", m.kind);
  v.required("message", m.message);
  v.text_if_any("traceback", m.traceback);
}
KBV_FIELDS(WireTolerance) {
  v("atol", m.atol);
  v("rtol", m.rtol);
  v("rel_l2", m.rel_l2);
  v("use_rel_l2", m.use_rel_l2);
}
KBV_FIELDS(StopRule) {
  v("warmup", m.warmup);
  v("min_samples", m.min_samples);
  v("min_samples_at_cap", m.min_samples_at_cap);
  v("max_samples", m.max_samples);
  v("rse_target", m.rse_target);
  v("time_cap_s", m.time_cap_s);
  v("max_discards", m.max_discards);
  v("calls", m.calls);
}
KBV_FIELDS(TimingSettings) {
  v.nested("rule", m.rule);
  v("flush_bytes", m.flush_bytes);
  v("launch_hold_us", m.launch_hold_us);
  v("threads", m.threads);
  v("l2_flush", m.l2_flush);
  v("upstream_loop", m.upstream_loop);
}
KBV_FIELDS(HelloReply) {
  v("pid", m.pid);
  v("role", m.role);
  v("torch_version", m.torch_version);
  v("python_version", m.python_version);
  v("cuda_available", m.cuda_available);
  v("cuda_built", m.cuda_built);
  v("device_name", m.device_name);
  v("device_count", m.device_count);
}
KBV_FIELDS(LoadRequest) {
  v.required("path", m.path);
  v.required("code", m.code);
  v("device", m.device);
  v("precision", m.precision);
  v("seed", m.seed);
  v("init_inputs", m.init_inputs);
  v("cpu_threads", m.cpu_threads);
  v("reference_precision", m.reference_precision);
  v("cpu_sizes", m.cpu_sizes);
  v("cast_init_inputs", m.cast_init_inputs);
  v("meta_model", m.meta_model);
}
KBV_FIELDS(LoadProblemReply) {
  v("init_inputs", m.init_inputs);
  v("overrides", m.overrides);
  v("sizes", m.sizes);
  v("model", m.model);
  v("model_note", m.model_note);
}
KBV_FIELDS(LoadCandidateReply) { v("load_seconds", m.load_seconds); }
KBV_FIELDS(DescribeRequest) { v("seed", m.seed); }
KBV_FIELDS(InputShape) {
  v("dtype", m.dtype);
  v("sizes", m.sizes);
  v("value", m.value);
}
KBV_FIELDS(DescribeReply) {
  v.list("inputs", m.inputs);
  v("draw", m.draw);
  v("note", m.note);
}
KBV_FIELDS(KernelbenchSeedsRequest) { v("n", m.n); }
KBV_FIELDS(KernelbenchSeedsReply) { v("seeds", m.seeds); }
KBV_FIELDS(InputsRequest) {
  v.required("seed", m.seed);
  v("scale", m.scale);
  v("input_draw", m.input_draw);
  fields(v, m.tolerance);
  v("draws_before", m.draws_before);
  v("replace", m.replace);
  v("replace_arg", m.replace_arg);
  v("cast_integer_inputs", m.cast_integer_inputs);
}
KBV_FIELDS(InputsReply) {
  v("args", m.args);
  v("reference_seconds", m.reference_seconds);
  v("outputs", m.outputs);
  v("output_aliases", m.output_aliases);
  v("reference_error", m.reference_error);
}
KBV_FIELDS(CheckRequest) {
  v.required("outputs", m.outputs);
  fields(v, m.tolerance);
}
KBV_FIELDS(CheckReply) {
  v("passed", m.passed);
  v("reason", m.reason);
  v("comparisons", m.comparisons);
  v("mutated_inputs", m.mutated_inputs);
}
KBV_FIELDS(LintRequest) {
  v.required("seeds", m.seeds);
  v("scale", m.scale);
  v("input_draw", m.input_draw);
  fields(v, m.tolerance);
}
KBV_FIELDS(LintReply) {
  v("inputs", m.inputs);
  v("outputs", m.outputs);
  v("dropout", m.dropout);
  v("allow", m.allow);
  v("training", m.training);
  v("precision", m.precision);
  v("allow_error", m.allow_error);
  v("upstream_cast", m.upstream_cast);
}
KBV_FIELDS(TimeInputsRequest) {
  v.required("seeds", m.seeds);
  v("max_bytes", m.max_bytes);
  v("input_draw", m.input_draw);
}
KBV_FIELDS(TimeInputsReply) {
  v("sets", m.sets);
  v("input_bytes", m.input_bytes);
  v("output_bytes", m.output_bytes);
}
KBV_FIELDS(TimeReferenceRequest) {
  fields(v, m.timing);
  v("mode", m.mode);
  v("fresh_seed", m.fresh_seed);
  v("marks", m.marks);
}
KBV_FIELDS(TimeCandidateRequest) {
  fields(v, m.timing);
  v.required("sets", m.sets);
  v("spot_seed", m.spot_seed);
  v("fresh", m.fresh);
  v("spot_per_output", m.spot_per_output);
  v("spot_max_calls", m.spot_max_calls);
  v("marks", m.marks);
  v("baseline_mode", m.baseline_mode);
}
KBV_FIELDS(TimeReply) {
  v("method", m.method);
  v("samples_ms", m.samples_ms);
  v("discarded_ms", m.discarded_ms);
  v("mismatches", m.mismatches);
  v("max_mismatch_ms", m.max_mismatch_ms);
  v("overhead_ms", m.overhead_ms);
  v("sync_overhead_ms", m.sync_overhead_ms);
  v("host_spread_ms", m.host_spread_ms);
  v("expected_mhz", m.expected_mhz);
  v("sm_mhz_min", m.sm_mhz_min);
  v("sm_mhz_max", m.sm_mhz_max);
  v("mem_mhz_min", m.mem_mhz_min);
  v("mem_mhz_max", m.mem_mhz_max);
  v("clock_reasons_seen", m.clock_reasons_seen);
  v("clock_source", m.clock_source);
  v("throttled_kept", m.throttled_kept);
  v("flush_bytes", m.flush_bytes);
  v("sampling_s", m.sampling_s);
  v("host_call_ms", m.host_call_ms);
  v("launch_hold_us", m.launch_hold_us);
  v("launch_hold_held_ms", m.launch_hold_held_ms);
  v("launch_hold_late", m.launch_hold_late);
  v("stop", m.stop);
  v("warmup", m.warmup);
  v("inputs", m.inputs);
  v("sets", m.sets);
  v("mode", m.mode);
  v("spot", m.spot);
  v("discarded_at", m.discarded_at);
  v("threads", m.threads);
  v("cpus", m.cpus);
  v("sample_clock", m.sample_clock);
}
KBV_FIELDS(TimeDrawRequest) {
  v.required("fresh_seed", m.fresh_seed);
  v.required("index", m.index);
}
KBV_FIELDS(SpotCheckRequest) {
  v.required("entries", m.entries);
  v("atol", m.atol);
  v("rtol", m.rtol);
  v("fresh_seed", m.fresh_seed);
}
KBV_FIELDS(SpotCheckReply) {
  v("checked", m.checked);
  v("failed", m.failed);
  v("first_failure", m.first_failure);
  v("expected_numel", m.expected_numel);
}
KBV_FIELDS(CalibrateRequest) { v("matmul_n", m.matmul_n); }
KBV_FIELDS(CalibrateReply) {
  v("bandwidth_bytes_per_s", m.bandwidth_bytes_per_s);
  v("buffer_bytes", m.buffer_bytes);
  v("copies", m.copies);
  v("method", m.method);
  v("matmul_fp32_flops_per_s", m.matmul_fp32_flops_per_s);
  v("matmul_tf32_flops_per_s", m.matmul_tf32_flops_per_s);
  v("matmul_n", m.matmul_n);
}
KBV_FIELDS(MeasureRequest) {
  v("args", m.args);
  v("seed", m.seed);
  v("input_draw", m.input_draw);
  v("repeats", m.repeats);
  v("baseline", m.baseline);
}
KBV_FIELDS(MeasureReply) {
  v("memory", m.memory);
  v("compute", m.compute);
}
KBV_FIELDS(RunRequest) { v.required("args", m.args); }
KBV_FIELDS(RunReply) {
  v("outputs", m.outputs);
  v("seconds", m.seconds);
}
KBV_FIELDS(AuditRequest) {
  v("phase", m.phase);
  v.required("args", m.args);
  fields(v, m.tolerance);
}
KBV_FIELDS(AuditReply) {
  v("outputs", m.outputs);
  v.rest(m.observed);
}
KBV_FIELDS(BuildRequest) {
  v.required("path", m.path);
  v.required("code", m.code);
  v("device", m.device);
}
KBV_FIELDS(BuildReply) { v("seconds", m.seconds); }
KBV_FIELDS(DrawAsk) {
  v.required("index", m.index);
  v.text_if_any("mark", m.mark);
}
KBV_FIELDS(ForkRequest) {
  v.required("env", m.env);
  v.required("role", m.role);
  v("cwd", m.cwd);
  v("sandbox", m.sandbox);
  v("cpus", m.cpus);
}
#undef KBV_FIELDS

// Writes a message's fields into a JSON object; absent optionals are left out.
struct Writer {
  json& j;
  template <class T> void operator()(const char* key, const T& value) {
    if constexpr (is_optional<T>::value) {
      if (value) j[key] = *value;
    } else {
      j[key] = value;
    }
  }
  template <class T> void required(const char* key, const T& value) { (*this)(key, value); }
  void text_if_any(const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  }
  template <class T> void nested(const char* key, const T& value) {
    json sub = json::object();
    Writer w{sub};
    fields(w, value);
    j[key] = sub;
  }
  template <class T> void list(const char* key, const std::vector<T>& items) {
    json a = json::array();
    for (const auto& item : items) {
      json sub = json::object();
      Writer w{sub};
      fields(w, item);
      a.push_back(sub);
    }
    j[key] = a;
  }
  void rest(const json& others) {
    if (!others.is_object()) return;
    for (const auto& [k, val] : others.items())
      if (!j.contains(k)) j[k] = val;
  }
};

// Reads a message's fields from a JSON object; the first problem becomes `error` and stops it.
struct Reader {
  const json& j;
  std::string& error;
  std::vector<std::string> seen;  // keys read (for rest())

  template <class T> void assign(const char* key, const json& value, T& out) {
    try {
      if constexpr (is_optional<T>::value) {
        out = value.get<typename T::value_type>();
      } else {
        out = value.get<T>();
      }
    } catch (const json::exception&) {
      error = fmt::format("field '{}' is {} where {} was expected", key, value.dump().substr(0, 80),
                          expected_type<T>());
    }
  }
  template <class T> static const char* expected_type() {
    using U = std::conditional_t<is_optional<T>::value, T, std::optional<T>>;
    using V = typename U::value_type;
    if constexpr (std::is_same_v<V, bool>) return "true or false";
    else if constexpr (std::is_unsigned_v<V>) return "a non-negative integer";
    else if constexpr (std::is_integral_v<V>) return "an integer";
    else if constexpr (std::is_floating_point_v<V>) return "a number";
    else if constexpr (std::is_same_v<V, std::string>) return "a string";
    else if constexpr (requires { typename V::value_type; }) return "a list";
    else return "another type";
  }
  template <class T> static bool fits(const json& value) {
    using U = std::conditional_t<is_optional<T>::value, T, std::optional<T>>;
    using V = typename U::value_type;
    if constexpr (std::is_same_v<V, bool>) return value.is_boolean();
    else if constexpr (std::is_unsigned_v<V>) return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
    else if constexpr (std::is_integral_v<V>) return value.is_number_integer();
    else if constexpr (std::is_floating_point_v<V>) return value.is_number();
    else if constexpr (std::is_same_v<V, std::string>) return value.is_string();
    else return true;
  }
  template <class T> void read(const char* key, T& out, bool need) {
    if (!error.empty()) return;
    seen.push_back(key);
    auto it = j.find(key);
    if (it == j.end() || (it->is_null() && !std::is_same_v<T, json> && !std::is_same_v<T, std::optional<json>>)) {
      if (need) error = fmt::format("the required field '{}' is missing", key);
      return;
    }
    if (!fits<T>(*it)) {
      error = fmt::format("field '{}' is {} where {} was expected", key, it->dump().substr(0, 80), expected_type<T>());
      return;
    }
    assign(key, *it, out);
  }
  template <class T> void operator()(const char* key, T& out) { read(key, out, false); }
  template <class T> void required(const char* key, T& out) { read(key, out, true); }
  void text_if_any(const char* key, std::string& out) { read(key, out, false); }
  template <class T> void nested(const char* key, T& out) {
    if (!error.empty()) return;
    seen.push_back(key);
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_object()) {
      error = fmt::format("field '{}' is {} where an object was expected", key, it->dump().substr(0, 80));
      return;
    }
    Reader r{*it, error, {}};
    fields(r, out);
    if (!error.empty()) error = fmt::format("in '{}': {}", key, error);
  }
  template <class T> void list(const char* key, std::vector<T>& out) {
    if (!error.empty()) return;
    seen.push_back(key);
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_array()) {
      error = fmt::format("field '{}' is {} where a list was expected", key, it->dump().substr(0, 80));
      return;
    }
    out.clear();
    for (size_t i = 0; i < it->size() && error.empty(); ++i) {
      const json& item = (*it)[i];
      if (!item.is_object()) {
        error = fmt::format("item {} of '{}' is {} where an object was expected", i, key, item.dump().substr(0, 80));
        return;
      }
      T t{};
      Reader r{item, error, {}};
      fields(r, t);
      if (!error.empty()) error = fmt::format("in item {} of '{}': {}", i, key, error);
      out.push_back(std::move(t));
    }
  }
  void rest(json& out) {
    out = json::object();
    for (const auto& [k, val] : j.items())
      if (k != "ok" && k != "op" && std::find(seen.begin(), seen.end(), k) == seen.end()) out[k] = val;
  }
};

template <class T> json write(const T& m, const char* envelope_key, const json& envelope_value) {
  json j = json::object();
  j[envelope_key] = envelope_value;
  Writer w{j};
  fields(w, m);
  return j;
}

template <class T> std::string read(const json& j, T& m) {
  if (!j.is_object()) return fmt::format("the message is {}, not a JSON object", j.dump().substr(0, 80));
  std::string error;
  Reader r{j, error, {}};
  fields(r, m);
  return error;
}

}  // namespace

const char* op_name(Op op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<Op> op_from_name(const std::string& name) {
  for (size_t i = 0; i < std::size(kOpNames); ++i)
    if (name == kOpNames[i]) return static_cast<Op>(i);
  return std::nullopt;
}

std::optional<Op> op_of(const json& message) {
  if (!message.is_object()) return std::nullopt;
  auto it = message.find("op");
  if (it == message.end() || !it->is_string()) return std::nullopt;
  return op_from_name(it->get<std::string>());
}

std::string op_text(const json& message) {
  if (!message.is_object()) return "";
  auto it = message.find("op");
  if (it == message.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump().substr(0, 40);
}

bool reply_ok(const json& reply) {
  if (!reply.is_object()) return false;
  auto it = reply.find("ok");
  return it != reply.end() && it->is_boolean() && it->get<bool>();
}

Failure failure_of(const json& reply) {
  Failure f;
  if (std::string e = read(reply, f); !e.empty()) {
    // Whatever fields the reply has are kept; what is missing says so.
    if (f.kind.empty()) f.kind = "protocol_error";
    if (f.message.empty()) f.message = "a malformed failure reply (" + e + "): " + reply.dump().substr(0, 200);
  }
  return f;
}

json to_json(const Failure& m) { return write(m, "ok", false); }
std::string from_json(const json& j, Failure& m) { return read(j, m); }

#define KBV_REQUEST(T)                                                      \
  json to_json(const T& m) { return write(m, "op", op_name(T::op)); }       \
  std::string from_json(const json& j, T& m) { return read(j, m); }
#define KBV_REPLY(T)                                                        \
  json to_json(const T& m) { return write(m, "ok", true); }                 \
  std::string from_json(const json& j, T& m) { return read(j, m); }
KBV_REPLY(Done)
KBV_REQUEST(HelloRequest)
KBV_REPLY(HelloReply)
KBV_REQUEST(LoadRequest)
KBV_REPLY(LoadProblemReply)
KBV_REPLY(LoadCandidateReply)
KBV_REQUEST(DescribeRequest)
KBV_REPLY(DescribeReply)
#define KBV_BARE(T)                                                         \
  json to_json(const T& m) {                                                \
    json j = json::object();                                                \
    Writer w{j};                                                            \
    fields(w, m);                                                           \
    return j;                                                               \
  }                                                                         \
  std::string from_json(const json& j, T& m) { return read(j, m); }
KBV_BARE(InputShape)
KBV_BARE(ForkRequest)
KBV_REQUEST(KernelbenchSeedsRequest)
KBV_REPLY(KernelbenchSeedsReply)
KBV_REQUEST(InputsRequest)
KBV_REPLY(InputsReply)
KBV_REQUEST(CheckRequest)
KBV_REPLY(CheckReply)
KBV_REQUEST(ReleaseRequest)
KBV_REQUEST(LintRequest)
KBV_REPLY(LintReply)
KBV_REQUEST(TimeInputsRequest)
KBV_REPLY(TimeInputsReply)
KBV_REQUEST(TimeReferenceRequest)
KBV_REQUEST(TimeCandidateRequest)
KBV_REPLY(TimeReply)
KBV_REQUEST(TimeDrawRequest)
KBV_REQUEST(SpotCheckRequest)
KBV_REPLY(SpotCheckReply)
KBV_REQUEST(TimeReleaseRequest)
KBV_REQUEST(CalibrateRequest)
KBV_REPLY(CalibrateReply)
KBV_REQUEST(MeasureRequest)
KBV_REPLY(MeasureReply)
KBV_REQUEST(RunRequest)
KBV_REPLY(RunReply)
KBV_REQUEST(AuditRequest)
KBV_REPLY(AuditReply)
KBV_REQUEST(BuildRequest)
KBV_REPLY(BuildReply)
KBV_REQUEST(ExitRequest)
KBV_REQUEST(PingRequest)
KBV_REQUEST(DrawAsk)
#undef KBV_REQUEST
#undef KBV_REPLY
#undef KBV_BARE

}  // namespace kbv::msg
