// Every supervisor <-> worker message as a plain struct (DESIGN.md, "Messages (src/proto)").
// Both sides include this header; no op name or top-level reply key is spelled anywhere else.
// On the wire (channel.h) a request is {"op": "<name>", ...fields} and a reply {"ok": true,
// ...fields} or a Failure {"ok": false, "kind", "message", "traceback"?}.
//
// For each struct: to_json (the wire object, with "op" or "ok" added) and from_json (fields from a
// wire object: an absent optional field keeps its default, an absent required one or a value of
// the wrong type is an error message; nothing throws). Defaults are the worker's of before the
// structs. Sub-documents whose schema belongs to another module stay nlohmann::json; each such
// field names where its schema is written.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/measure.h"

namespace kbv::msg {

enum class Op {
  hello, load, describe, kernelbench_seeds, inputs, check, release, lint, time_inputs, time, time_draw,
  spot_check, time_release, calibrate, measure, run, audit, build, exit,
  ping,  // "are you up": answered once the worker's Python and torch are imported (a warm worker's readiness)
  draw,  // the candidate worker asking the supervisor for a fresh timing draw (during `time`)
};
const char* op_name(Op op);
std::optional<Op> op_from_name(const std::string& name);
// The op of a message from the other side; std::nullopt when it has none or an unknown one.
std::optional<Op> op_of(const nlohmann::json& message);
// The op name of a message as text, for error messages ("" when it has none).
std::string op_text(const nlohmann::json& message);

// ---- envelopes -----------------------------------------------------------------------------
// {"ok": false, ...}: a request that failed.
struct Failure {
  std::string kind;     // problem_error, runtime_error, compile_error, protocol_error, rejected, ...
  std::string message;
  std::string traceback;  // "" when there is none (then not on the wire)
};
// The failure kind of a candidate-kind worker's timing request whose shared input file was
// replaced under its name since the reference exported it (worker/transfer.h ReplacedFile): only a
// candidate sharing the folder can have done it (T17, docs/TIMING.md "The baselines' twin").
inline constexpr const char* kSharedBufferReplaced = "shared_buffer_replaced";
// {"ok": true}: a reply with no fields.
struct Done {};

// The comparison tolerance carried by inputs, check, lint and audit. An absent bound is the
// op's own fallback (1e-2 for the reference's own error in inputs, else 1e-3).
struct WireTolerance {
  std::optional<double> atol, rtol, rel_l2;
  bool use_rel_l2 = true;
};

// ---- the ops -------------------------------------------------------------------------------
struct HelloRequest { static constexpr Op op = Op::hello; };
struct HelloReply {
  int64_t pid = 0;
  std::string role;
  std::string torch_version, python_version;
  bool cuda_available = false;
  bool cuda_built = false;
  std::string device_name = "cpu";
  std::optional<int> device_count;  // only when CUDA is available
};

// Reference: loads the problem. Candidate: builds the solution, then ModelNew(init_inputs).
struct LoadRequest {
  static constexpr Op op = Op::load;
  std::string path;  // required
  std::string code;  // required
  std::string device = "cpu";
  std::string precision = "fp32";
  int64_t seed = 42;  // torch.manual_seed before get_init_inputs() and the constructor
  std::optional<nlohmann::json> init_inputs;  // candidate (required there): the reference's wire values
  int cpu_threads = 0;  // CPU: ATen's intra-op threads from the load on (the thread budget; 0: as they are)
  std::string reference_precision = "fp32-strict";  // reference: "fp32-strict" | "torch-default" (cuDNN TF32 on)
  std::string cpu_sizes;  // reference: "" | "auto" | a factor in (0, 1]: reduced sizes (worker/problem_sizes.h)
  // reference: every get_init_inputs() tensor cast to the precision's dtype, integers included, as
  // upstream's _process_input_tensor does (Protocol::cast_init_inputs); false: as drawn.
  bool cast_init_inputs = false;
  // reference: only shapes are asked (kbv problems): the Model is built on torch's meta device (no
  // parameter allocated), really only where that fails. Such a worker computes nothing.
  bool meta_model = false;
};
struct LoadProblemReply {
  nlohmann::json init_inputs = nlohmann::json::array();  // wire values (worker/python.h to_wire)
  nlohmann::json overrides = nlohmann::json::object();   // KBV_CPU: global -> repr of its CPU value
  std::string sizes;  // cpu_sizes: what was scaled and kept, or why nothing was
  std::string model;       // meta_model: "meta" (built without values) or "real" (model_note says why)
  std::string model_note;
};
struct LoadCandidateReply {
  double load_seconds = 0;
};

struct DescribeRequest {
  static constexpr Op op = Op::describe;
  int64_t seed = 42;
};
struct InputShape {  // a tensor (dtype, sizes) or another value (value: its repr)
  std::optional<std::string> dtype;
  std::optional<std::vector<int64_t>> sizes;
  std::optional<std::string> value;
};
struct DescribeReply {
  std::vector<InputShape> inputs;
  std::string draw = "meta";  // "meta": no tensor allocated; "real": drawn with values (note says why)
  std::string note;
};

struct KernelbenchSeedsRequest {
  static constexpr Op op = Op::kernelbench_seeds;
  int n = 5;
};
struct KernelbenchSeedsReply {
  std::vector<uint64_t> seeds;
};

// Reference: one draw of get_inputs() from `seed`, scaled, its expected outputs kept.
struct InputsRequest {
  static constexpr Op op = Op::inputs;
  uint64_t seed = 0;  // required
  double scale = 1.0;
  std::string input_draw = "host";  // "host" | "device"
  WireTolerance tolerance;          // below fp32: for reference_error (fallback 1e-2)
  int draws_before = 0;             // get_inputs() draws discarded after seeding (protocol/hidden.h)
  std::string replace;              // "" | "alternating-pm1": argument replace_arg replaced (protocol/hidden.h)
  int replace_arg = 1;
  bool cast_integer_inputs = false;  // every tensor to the precision's dtype, as upstream casts
};
struct InputsReply {
  nlohmann::json args = nlohmann::json::array();  // wire values, tensors as shared handles (worker/transfer.h)
  double reference_seconds = 0;
  uint64_t outputs = 0;
  nlohmann::json output_aliases = nlohmann::json::array();  // worker/audit.h storage_overlaps
  std::optional<nlohmann::json> reference_error;           // below fp32: check/precision.h, per output
};

struct CheckRequest {
  static constexpr Op op = Op::check;
  nlohmann::json outputs = nlohmann::json::array();  // required: the candidate's tensor handles
  WireTolerance tolerance;
};
struct CheckReply {
  bool passed = false;
  std::string reason;
  nlohmann::json comparisons = nlohmann::json::array();  // check/compare.h Comparison::to_json, per output
  std::vector<int64_t> mutated_inputs;                  // argument positions the candidate changed
};

struct ReleaseRequest { static constexpr Op op = Op::release; };

// `kbv lint-problems`: statistics of the reference on two draws (src/supervisor/problem_lint.h).
struct LintRequest {
  static constexpr Op op = Op::lint;
  std::vector<uint64_t> seeds;  // required: draws A and B
  double scale = 1.0;
  std::string input_draw = "host";
  WireTolerance tolerance;
};
struct LintReply {
  // Per input / per output statistics: the schema is written in worker/problem_stats.h and read by
  // supervisor/problem_lint.cc.
  nlohmann::json inputs = nlohmann::json::array();
  nlohmann::json outputs = nlohmann::json::array();
  std::vector<std::string> dropout;                   // dropout modules in training mode
  nlohmann::json allow = nlohmann::json::object();    // KBV_LINT_ALLOW: rule -> reason
  bool training = false;
  std::string precision = "fp32";
  std::optional<std::string> allow_error;
  // Integer or bool inputs: the reference with every input tensor cast to the precision's floating
  // dtype, as upstream KernelBench's harness casts them: {"failed": why} or {"comparison": ...}.
  std::optional<nlohmann::json> upstream_cast;
};

struct TimeInputsRequest {
  static constexpr Op op = Op::time_inputs;
  std::vector<uint64_t> seeds;  // required
  uint64_t max_bytes = uint64_t{4} << 30;
  std::string input_draw = "host";
};
struct TimeInputsReply {
  nlohmann::json sets = nlohmann::json::array();  // per set, the wire values of its arguments
  uint64_t input_bytes = 0, output_bytes = 0;
};

// The loop's settings, common to both roles' `time`.
struct TimingSettings {
  StopRule rule;
  uint64_t flush_bytes = 0;   // 0: the default size
  double launch_hold_us = 0;
  int threads = 0;            // CPU: ATen's intra-op threads while timing (0: as they are)
  bool l2_flush = true;       // a cache flush before each timed call (TimingProtocol::l2_flush)
  bool upstream_loop = false; // TimingProtocol::loop "upstream": no input reload, the event time kept
};
// Reference: a baseline of the problem's Model.
struct TimeReferenceRequest {
  static constexpr Op op = Op::time;
  TimingSettings timing;
  std::string mode = "tf32";            // "fp32" | "tf32" | "compile"
  std::optional<uint64_t> fresh_seed;   // fresh draws (call i on draw fresh_seed + i), else the sets
  // The candidate's round trips before and after every call, made here too (DrawAsk on the reply
  // channel: "" after each fresh draw, "start" just before the call, "end" just after it), so that
  // both sides' calls follow the same blocking waits (CPU timing: docs/TIMING.md "Symmetric marks").
  bool marks = false;
};
// Candidate: the candidate's timed calls.
struct TimeCandidateRequest {
  static constexpr Op op = Op::time;
  TimingSettings timing;
  nlohmann::json sets = nlohmann::json::array();  // required: TimeInputsReply::sets
  uint64_t spot_seed = 0;
  bool fresh = false;  // ask the supervisor for each call's draw (Op::draw)
  int spot_per_output = 2;
  int spot_max_calls = 0;  // 0: every timed call
  // Mark every call's interval on the reply channel (DrawAsk::mark "start" just before it, "end"
  // just after it): the supervisor's own clock between the two bounds the reported sample.
  bool marks = false;
  // Sent only to the baselines' twin (a candidate-kind worker whose ModelNew is the problem's Model,
  // docs/TIMING.md "The baselines' twin"): the matmul precision of baseline mode "fp32" or "tf32"
  // for its calls, "fp32" after. Empty: as the worker's code left it.
  std::string baseline_mode;
};
// Raw samples and what was seen while taking them (worker/timing.h TimingRun); the supervisor
// computes the statistics.
struct TimeReply {
  std::string method;
  std::vector<double> samples_ms, discarded_ms;
  int mismatches = 0;
  double max_mismatch_ms = 0, overhead_ms = 0, sync_overhead_ms = 0, host_spread_ms = 0;
  double expected_mhz = 0, sm_mhz_min = 0, sm_mhz_max = 0, mem_mhz_min = 0, mem_mhz_max = 0;
  uint64_t clock_reasons_seen = 0;
  std::string clock_source = "none";
  int throttled_kept = 0;
  uint64_t flush_bytes = 0;
  double sampling_s = 0;
  double host_call_ms = -1;
  double launch_hold_us = 0, launch_hold_held_ms = 0;
  int launch_hold_late = 0;
  std::string stop = "none";
  int warmup = 0;
  std::optional<std::string> inputs;  // "fresh" on fresh draws
  std::optional<uint64_t> sets;       // else the number of input sets
  std::optional<std::string> mode;    // reference: the baseline's mode
  std::optional<nlohmann::json> spot; // candidate: spot entries {sample, set, output, index, value}
  std::vector<int> discarded_at;      // the sample numbers of discarded_ms, in order (GPU throttling)
  // CPU: ATen's intra-op threads and the calling thread's affinity ("0-1") while timing, as the
  // worker saw them (the candidate's are its claim; kbv checks its affinity from outside).
  std::optional<int> threads;
  std::optional<std::string> cpus;
  // The loop's sample clock on the GPU: "events" (upstream's loop: the cuda-event time, even where
  // the host clock disagreed); absent: kbv's (the host clock where they disagreed).
  std::optional<std::string> sample_clock;
};

// Reference: fresh draw fresh_seed + index into the shared set-0 buffers.
struct TimeDrawRequest {
  static constexpr Op op = Op::time_draw;
  uint64_t fresh_seed = 0;  // required
  uint64_t index = 0;       // required
};

struct SpotCheckRequest {
  static constexpr Op op = Op::spot_check;
  nlohmann::json entries = nlohmann::json::array();  // required: TimeReply::spot (or a subset)
  double atol = 1e-3, rtol = 1e-3;
  std::optional<uint64_t> fresh_seed;  // recompute each named draw, else the input sets' outputs
};
struct SpotCheckReply {
  int checked = 0, failed = 0;
  std::string first_failure;
  int64_t expected_numel = 0;
};

struct TimeReleaseRequest { static constexpr Op op = Op::time_release; };

struct CalibrateRequest {
  static constexpr Op op = Op::calibrate;
  std::optional<int64_t> matmul_n;  // default 8192 on the GPU, 512 on the CPU
};
struct CalibrateReply {
  double bandwidth_bytes_per_s = 0;
  uint64_t buffer_bytes = 0;
  int copies = 0;
  std::string method;
  double matmul_fp32_flops_per_s = 0, matmul_tf32_flops_per_s = 0;
  int64_t matmul_n = 0;
};

// Memory (and, for the candidate, kernel attribution) of a few untimed calls (docs/MEMORY.md).
struct MeasureRequest {
  static constexpr Op op = Op::measure;
  std::optional<nlohmann::json> args;  // candidate (required there): the reference's wire values
  std::optional<uint64_t> seed;        // reference (required there): its own draw
  std::string input_draw = "host";
  int repeats = 3;
  std::string baseline = "fp32";  // reference: "tf32" | "fp32"
};
struct MeasureReply {
  nlohmann::json memory = nlohmann::json::object();  // measure/memory.h
  std::optional<nlohmann::json> compute;             // measure/compute.h
};

struct RunRequest {
  static constexpr Op op = Op::run;
  nlohmann::json args = nlohmann::json::array();  // required
};
struct RunReply {
  nlohmann::json outputs = nlohmann::json::array();  // tensor handles (worker/transfer.h)
  double seconds = 0;
};

// Candidate: the runtime audits (worker/audit.h), phase "first" on draw A, then "second" on B.
struct AuditRequest {
  static constexpr Op op = Op::audit;
  std::string phase;                              // "first" | anything else: the second
  nlohmann::json args = nlohmann::json::array();  // required
  WireTolerance tolerance;
};
struct AuditReply {
  // The observations (schema: worker/audit.h, read by check/runtime_audit.h), at the top level of
  // the reply beside "ok" and "outputs".
  nlohmann::json observed = nlohmann::json::object();
  std::optional<nlohmann::json> outputs;  // second phase: handles of the last call's outputs (or null)
};

struct BuildRequest {
  static constexpr Op op = Op::build;
  std::string path;  // required
  std::string code;  // required
  std::string device = "cpu";
};
struct BuildReply {
  double seconds = 0;
};

struct ExitRequest { static constexpr Op op = Op::exit; };
// Any role: answered with Done as soon as the worker serves requests (supervisor/warm_pool.h).
struct PingRequest { static constexpr Op op = Op::ping; };

// Worker -> supervisor during a candidate's `time` (or a baseline's, TimeReferenceRequest::marks):
// the next fresh draw. The answer is a Done or a Failure.
struct DrawAsk {
  static constexpr Op op = Op::draw;
  int64_t index = 0;  // required
  // "": the draw of call `index`; "start" / "end": call `index`'s interval begins now / has
  // just ended (TimeCandidateRequest::marks).
  std::string mark;
};

// Supervisor -> a worker forked by the zygote (supervisor/zygote.h), on a socket that worker alone reads:
// what exec would have given it. No "op" or "ok".
struct ForkRequest {
  std::vector<std::string> env;  // required: the whole environment, "NAME=value"
  std::string role;              // required: kbv_worker.serve's role
  std::string cwd;               // "": the zygote's
  std::optional<nlohmann::json> sandbox;  // none: no sandbox; else sandbox/plan_io.cc's schema
  // The CPUs it runs on, set before its sandbox (an exec'd worker's: the ones it was pinned to, or
  // kbv's own); empty: the zygote's.
  std::vector<int> cpus;
};

// ---- conversions ---------------------------------------------------------------------------
#define KBV_MESSAGE(T)                    \
  nlohmann::json to_json(const T& m);     \
  std::string from_json(const nlohmann::json& j, T& m);
KBV_MESSAGE(Failure)
KBV_MESSAGE(Done)
KBV_MESSAGE(HelloRequest)
KBV_MESSAGE(HelloReply)
KBV_MESSAGE(LoadRequest)
KBV_MESSAGE(LoadProblemReply)
KBV_MESSAGE(LoadCandidateReply)
KBV_MESSAGE(DescribeRequest)
KBV_MESSAGE(DescribeReply)
KBV_MESSAGE(InputShape)  // an item of DescribeReply::inputs (no "op" or "ok")
KBV_MESSAGE(KernelbenchSeedsRequest)
KBV_MESSAGE(KernelbenchSeedsReply)
KBV_MESSAGE(InputsRequest)
KBV_MESSAGE(InputsReply)
KBV_MESSAGE(CheckRequest)
KBV_MESSAGE(CheckReply)
KBV_MESSAGE(ReleaseRequest)
KBV_MESSAGE(LintRequest)
KBV_MESSAGE(LintReply)
KBV_MESSAGE(TimeInputsRequest)
KBV_MESSAGE(TimeInputsReply)
KBV_MESSAGE(TimeReferenceRequest)
KBV_MESSAGE(TimeCandidateRequest)
KBV_MESSAGE(TimeReply)
KBV_MESSAGE(TimeDrawRequest)
KBV_MESSAGE(SpotCheckRequest)
KBV_MESSAGE(SpotCheckReply)
KBV_MESSAGE(TimeReleaseRequest)
KBV_MESSAGE(CalibrateRequest)
KBV_MESSAGE(CalibrateReply)
KBV_MESSAGE(MeasureRequest)
KBV_MESSAGE(MeasureReply)
KBV_MESSAGE(RunRequest)
KBV_MESSAGE(RunReply)
KBV_MESSAGE(AuditRequest)
KBV_MESSAGE(AuditReply)
KBV_MESSAGE(BuildRequest)
KBV_MESSAGE(BuildReply)
KBV_MESSAGE(ExitRequest)
KBV_MESSAGE(PingRequest)
KBV_MESSAGE(DrawAsk)
KBV_MESSAGE(ForkRequest)  // no "op" or "ok"
#undef KBV_MESSAGE

// Whether a reply says ok (an object with "ok": true).
bool reply_ok(const nlohmann::json& reply);
// The Failure of a failed reply (kind "protocol_error" and a message saying so when the reply is
// not a well-formed failure).
Failure failure_of(const nlohmann::json& reply);

}  // namespace kbv::msg
