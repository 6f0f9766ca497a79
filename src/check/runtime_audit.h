// Runtime audits of a candidate (issue 4, runtime part): the decisions, in pure C++.
// The candidate worker (src/worker/audit.*) only observes: what ran during the audited calls
// (CPU samples by shared object and symbol), threads alive after return, outputs sharing storage
// with inputs, a repeat on fresh poisoned buffers. These functions turn the observations into the
// record's `compute` and `findings[]` (docs/POLICY.md, "Runtime audits"). No torch here.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace kbv {

// A symbol found inside the candidate's own extension .so that is not the candidate's code:
// pybind11 argument glue, and ATen/c10/torch/std header code inlined into the extension
// (at::Tensor wrappers, intrusive_ptr refcounts), unless a lambda or local entity of a
// function outside those namespaces is part of its name (the candidate's parallel_for body).
// `name` is mangled (Itanium) or plain; "(PLT or padding)" (an address between the functions of
// an object that has a symbol table) is glue.
bool is_glue_symbol(const std::string& name);

// The record's `compute` (record-schema.md) from the worker's CPU observation:
//   {"method": "cpu-sampling", "calls": N, "cpu_ms": total CPU ms of the N calls,
//    "period_ms": sampling period, "samples": [{"object", "own_object", "symbol", "count"}]}
// or {"method": "not_measured", "reason"}. Samples in the candidate's own objects whose symbol is
// glue count as library ("extension glue"). Samples in the C math library (libm, libmvec) count
// for neither side (`math`, `math_samples`): an own loop calling expf does its work there too.
// `samples` and `own_share` are over the rest. ms are per call.
nlohmann::json cpu_compute(const nlohmann::json& observation);

// no_custom_compute (T11): fewer than kMinOwnShare of the audited calls' CPU samples in the
// candidate's own code. Not 0: a wrapper that only forwards to ATen still executes a few
// instructions of its own (argument checks, reference counts inlined into its body), which a
// sampler hits now and then: up to 2 of about 190 samples (1.3%) for cpu_aten_fnptr on a small
// matmul. The audit samples on one thread (worker/audit.cc), where an elementwise epilogue
// fused after a library GEMM keeps 14-18% on the CPU suite sizes: 3% sits between the two.
// Decided only from kMinComputeSamples samples on (docs/POLICY.md).
inline constexpr double kMinOwnShare = 0.03;
inline constexpr int kMinComputeSamples = 50;
// The CPU sampler's wall-time bounds per sampled call (worker/audit.cc sample_until_measured): 5 s,
// or up to 30 s while short of kMinComputeSamples (a call mostly off the CPU). The supervisor's
// limit on the audit's first phase adds the longer one to the calls' own limit, so a loaded
// host's slow sampling is not taken for a hung candidate.
inline constexpr double kSamplingWallS = 5.0, kSamplingMaxWallS = 30.0;

// One group of CPU samples ({"object", "own_object", "symbol", "count"}) as cpu_compute counts
// it: in the C math library (neither side), glue of the candidate's object (library), the
// candidate's own code, or library code.
enum class SampleKind { math, glue, own, library };
SampleKind sample_kind(const nlohmann::json& group);

// The samples no_custom_compute decides on: `own` of `counted` (math left out), as cpu_compute.
struct OwnSamples {
  int64_t own = 0;
  int64_t counted = 0;
};
OwnSamples own_samples(const nlohmann::json& groups);

// When the worker's sampler may stop (src/worker/audit.cc; it looks every 20 samples from 100
// on, and otherwise samples to its CPU budget): when the own share's Wilson interval at
// z = kShareZ lies wholly above kMinOwnShare (`above`) or wholly below it (`below`). Stopping on a
// point estimate instead (3 own samples seen) stopped on 3 of n > 100, a share under 3%, and
// rejected an honest 5% candidate about once in eight. z = 3 because the rule is looked at
// repeatedly: an honest 10% share stops after about 100 samples, a forwarding wrapper (no own
// samples) after about 300; what stays undecided is decided on the point estimate at the budget.
enum class ShareCall { undecided, above, below };

// Why the CPU sampling audit could not decide no_custom_compute ("" when it could, or when it is
// not a CPU sampling audit): the worker saw its sampler disturbed after a call (timer disarmed or
// re-timed, handler replaced, SIGPROF blocked: `disturbed`), the timer fired far less often than
// the CPU time spent allows (fewer than kMinFiredPerCpuMs per ms of CPU from 200 ms of CPU on:
// at most one signal per kernel tick, 1-10 ms), or fewer than kMinComputeSamples samples (math
// included).
// `observation` is the worker's compute observation, `compute` the record's (cpu_compute).
// Such an audit is re-run once; still undecided, it is never a pass (audit_undecided, T23).
inline constexpr double kMinFiredPerCpuMs = 0.025;
std::string audit_undecided(const nlohmann::json& observation, const nlohmann::json& compute);
inline constexpr double kShareZ = 3.0;
ShareCall call_own_share(int64_t own, int64_t counted, double min_share = kMinOwnShare);

// Whether anything the candidate's own code computed reaches the output (issue 29), from the
// worker's ablation (worker/own_calls.h, poison mode; the `ablation` object of the second audit
// phase): the model called once more with every tensor its own extension functions returned or
// wrote in place replaced by wrong finite values, and its outputs compared with the genuine ones
// under the protocol's tolerance.
//   not_applicable: the ablation did not run (no pybind11 function of the extension folder was
//                   found: Triton, ctypes) or could not poison; the sampled share decides alone.
//   not_reached:    no own function was called during forward, the own calls returned and wrote
//                   no tensor, or no output element changed beyond tolerance: the candidate's own
//                   code computes nothing that reaches the output (a dummy call, a result dropped,
//                   multiplied by 0 or scrubbed with nan_to_num). A fallback must do this.
//   reached:        some output element changed (or forward raised on the wrong values).
// `fraction` is the largest share of one output's elements that changed (a measurement).
enum class Reach { not_applicable, not_reached, reached };
struct ReachCall {
  Reach reach = Reach::not_applicable;
  std::string why;  // one sentence, for the finding or the record
  double fraction = 0.0;
};
ReachCall own_reach(const nlohmann::json& ablation);

// A token own part (issue 29): the own calls returned tensors, wrote nothing in place, and those
// tensors, replaced in full by wrong values, changed fewer than kMinReachFraction of every
// output's elements: the output is (almost) all library work, with own code computing a slice
// of it (an own kernel recomputing out[0, 0] after PyTorch computed everything). Decided on what
// the own code's results reach, not on a sampled time share, so the machine's load cannot move
// it (a one-element own call is 1-2% own code when sampled, near the share's line, and 50
// samples under load put it on either side). In-place writes are left out: the ablation
// overwrites only the elements a call changed, and an honest in-place kernel (a clamp most
// elements pass through unchanged) changes only those.
inline constexpr double kMinReachFraction = 0.01;
bool token_reach(const nlohmann::json& ablation, const ReachCall& reach);

// All runtime-audit findings for one candidate, in the record's findings[] form.
//   audit:     the candidate worker's reply to its two audit calls, merged:
//              {"threads": [...], "aliases": [...], "determinism": [...], "compute": {...}}
//   reference_aliases: the reference's own output/input storage sharing on its draw
//              ([{"output": i, "input": k}]), so that a problem whose Model returns a view of an
//              input does not count against the candidate.
//   stale_check: the reference's check of the outputs of the same-storage/new-values call
//              ({"passed", "reason", ...}); null when it could not run.
//   compute:   the record's `compute` (cpu_compute's result, or the GPU side's), may be null.
// no_custom_compute (T11, reject) when own_reach(audit["ablation"]) is not_reached or
// token_reach holds, on either device; on the CPU also when the sampled own share is below kMinOwnShare: of the own calls
// replayed alone (compute.scope "own_calls": an own function that hands its work to library
// code, a forwarding wrapper), or of the whole forward when there were none to replay.
nlohmann::json runtime_findings(const nlohmann::json& audit, const nlohmann::json& reference_aliases,
                                const nlohmann::json& stale_check, const nlohmann::json& compute);

}  // namespace kbv
