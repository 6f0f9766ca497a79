#include "check/runtime_audit.h"

#include <optional>
#include <random>

#include <gtest/gtest.h>

namespace kbv {
namespace runtime_audit_test {
using nlohmann::json;

TEST(GlueSymbol, PybindAndInlinedLibraryCodeIsGlue) {
  // pybind11's dispatcher lambda for a bound `at::Tensor f(at::Tensor)`.
  EXPECT_TRUE(is_glue_symbol(
      "_ZZN8pybind1112cpp_function10initializeIZN5torch6detail26wrap_pybind_function_impl_IRFN2at6TensorES6_EJLm0EELb0E"
      "EEDaOT_St16integer_sequenceImJXspT0_EEESt17integral_constantIbXT1_EEEUlS6_E_S6_JS6_EJNS_4nameENS_5scopeENS_7sib"
      "lingEA18_cEEEvSA_PFT0_DpT1_EDpRKT2_ENUlRNS_6detail13function_callEE1_4_FUNESV_"));
  EXPECT_TRUE(is_glue_symbol("_ZN8pybind1112cpp_function10dispatcherEP7_objectS2_S2_"));
  EXPECT_TRUE(is_glue_symbol("PyTuple_GET_SIZE.part.0"));
  EXPECT_TRUE(is_glue_symbol("(PLT or padding)"));
  EXPECT_TRUE(is_glue_symbol("_ZN3c1013intrusive_ptrINS_10TensorImplENS_19UndefinedTensorImplEE6reset_Ev"));
  EXPECT_TRUE(is_glue_symbol("_ZNK2at10TensorBase5numelEv"));
  EXPECT_TRUE(is_glue_symbol("_ZN2at6matmulERKNS_6TensorES2_"));
  EXPECT_TRUE(is_glue_symbol("PyInit_kbv_ex_relu"));
  EXPECT_TRUE(is_glue_symbol("_ZNSt6vectorIlSaIlEE17_M_realloc_insertIJRKlEEEvN9__gnu_cxx17__normal_iteratorIPlS1_EEDpOT_"));
}

TEST(GlueSymbol, CandidateFunctionsAndTheirLambdasAreOwnCode) {
  EXPECT_FALSE(is_glue_symbol("_Z8relu_cpuN2at6TensorE"));  // relu_cpu(at::Tensor)
  EXPECT_FALSE(is_glue_symbol("relu_kernel"));              // extern "C"
  EXPECT_FALSE(is_glue_symbol("_ZN12_GLOBAL__N_16kernelEPKfPfl"));  // (anonymous namespace)::kernel
  // at::parallel_for instantiated on a lambda of the candidate's my_func: the loop is inlined
  // into the library template, but it is the candidate's code.
  EXPECT_FALSE(is_glue_symbol("_ZN2at12parallel_forIZ7my_funcNS_6TensorEEUlllE_EEvlllRKT_"));
  // The lambda's own operator().
  EXPECT_FALSE(is_glue_symbol("_ZZ7my_funcN2at6TensorEENKUlllE_clEll"));
  // std::thread running a candidate lambda.
  EXPECT_FALSE(is_glue_symbol(
      "_ZNSt6thread11_State_implINS_8_InvokerISt5tupleIJZ6workerN2at6TensorEEUlvE_EEEEE6_M_runEv"));
}

json sampling(json samples, double cpu_ms = 300, int calls = 3) {
  return {{"method", "cpu-sampling"}, {"calls", calls}, {"cpu_ms", cpu_ms}, {"period_ms", 1.0}, {"samples", samples}};
}

TEST(CpuCompute, SharesSplitOwnCodeGlueAndLibraries) {
  json c = cpu_compute(sampling(json::array({
      {{"object", "/cache/ext/relu/relu.so"}, {"own_object", true}, {"symbol", "_Z8relu_cpuN2at6TensorE"}, {"count", 60}},
      {{"object", "/cache/ext/relu/relu.so"}, {"own_object", true}, {"symbol", "_ZNK2at10TensorBase5numelEv"}, {"count", 10}},
      {{"object", "/venv/torch/lib/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 30}},
  })));
  EXPECT_EQ(c["method"], "cpu-sampling");
  EXPECT_DOUBLE_EQ(c["own_share"].get<double>(), 0.6);
  EXPECT_EQ(c["samples"], 100);
  ASSERT_EQ(c["own"].size(), 1u);
  EXPECT_EQ(c["own"][0]["name"], "relu_cpu(at::Tensor)");
  EXPECT_DOUBLE_EQ(c["own"][0]["ms"].get<double>(), 60.0);  // 300 ms / 3 calls * 0.6
  ASSERT_EQ(c["library"].size(), 2u);
  EXPECT_EQ(c["library"][0]["name"], "libtorch_cpu.so");
  EXPECT_NE(c["library"][1]["name"].get<std::string>().find("extension glue"), std::string::npos);
}

TEST(CpuCompute, NotMeasuredKeepsTheReason) {
  json c = cpu_compute({{"method", "not_measured"}, {"reason", "no sampler"}});
  EXPECT_EQ(c["method"], "not_measured");
  EXPECT_EQ(c["reason"], "no sampler");
  EXPECT_EQ(cpu_compute(nullptr)["method"], "not_measured");
}

json findings_rules(const json& findings) {
  json rules = json::array();
  for (const auto& f : findings) rules.push_back(f["rule"].get<std::string>() + ":" + f["severity"].get<std::string>());
  return rules;
}

TEST(RuntimeFindings, CleanAuditHasNone) {
  json audit = {{"threads", json::array()},
                {"aliases", json::array()},
                {"determinism", json::array({{{"output", 0}, {"passed", true}}})}};
  json compute = cpu_compute(sampling(json::array(
      {{{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z1fv"}, {"count", 80}}})));
  EXPECT_TRUE(runtime_findings(audit, json::array(), {{"passed", true}}, compute).empty());
}

TEST(RuntimeFindings, NoOwnSamplesRejectsT11) {
  json compute = cpu_compute(sampling(json::array({
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_ZN2at6matmulERKNS_6TensorES2_"}, {"count", 2}},
      {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 198}},
  })));
  json f = runtime_findings(json::object(), json::array(), nullptr, compute);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["rule"], "no_custom_compute");
  EXPECT_EQ(f[0]["severity"], "reject");
  EXPECT_EQ(f[0]["cheat"], "T11");
  EXPECT_NE(f[0]["message"].get<std::string>().find("libtorch_cpu.so 99%"), std::string::npos) << f[0]["message"];
}

TEST(RuntimeFindings, AFewOwnSamplesBelowTheFloorStillReject) {
  json compute = cpu_compute(sampling(json::array({
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z7wrapperN2at6TensorES0_"}, {"count", 1}},
      {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 299}},
  })));
  EXPECT_EQ(findings_rules(runtime_findings(json::object(), json::array(), nullptr, compute))[0],
            "no_custom_compute:reject");
  json stray = cpu_compute(sampling(json::array({
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z7wrapperN2at6TensorES0_"}, {"count", 2}},
      {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 148}},
  })));
  EXPECT_EQ(findings_rules(runtime_findings(json::object(), json::array(), nullptr, stray))[0],
            "no_custom_compute:reject")
      << "1.3%: the most a forwarding wrapper was seen to get";
  json small_honest = cpu_compute(sampling(json::array({
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z8epiloguev"}, {"count", 14}},
      {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 86}},
  })));
  EXPECT_TRUE(runtime_findings(json::object(), json::array(), nullptr, small_honest).empty());
}

// An own loop calling log1p spends most samples in libm: neither own nor library, so a small
// own remainder is not a forwarding wrapper (the honest Softplus was rejected before).
TEST(RuntimeCompute, MathLibrarySamplesCountForNeitherSide) {
  json c = cpu_compute(sampling(json::array({
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z8softplusN2at6TensorE"}, {"count", 10}},
      {{"object", "/lib/x86_64-linux-gnu/libm.so.6"}, {"own_object", false}, {"symbol", "log1pf"}, {"count", 230}},
      {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 10}},
  })));
  EXPECT_EQ(c["samples"], 20);
  EXPECT_EQ(c["math_samples"], 230);
  EXPECT_DOUBLE_EQ(c["own_share"].get<double>(), 0.5);
  EXPECT_TRUE(runtime_findings(json::object(), json::array(), nullptr, c).empty())
      << "20 samples decide nothing";
}

TEST(OwnSamples, CountsAsCpuComputeDoes) {
  json groups = json::array({
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z8epiloguev"}, {"count", 7}},
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_ZNK2at10TensorBase5numelEv"}, {"count", 5}},
      {{"object", "/x/own.so"}, {"own_object", true}, {"symbol", ""}, {"count", 2}},  // no symbol table: own
      {{"object", "/lib/x86_64-linux-gnu/libm.so.6"}, {"own_object", false}, {"symbol", ""}, {"count", 40}},
      {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 86}},
  });
  OwnSamples s = own_samples(groups);
  EXPECT_EQ(s.own, 9);
  EXPECT_EQ(s.counted, 100);
  json c = cpu_compute(sampling(groups));
  EXPECT_EQ(c["samples"].get<int64_t>(), s.counted);
  EXPECT_DOUBLE_EQ(c["own_share"].get<double>(), 0.09);
  EXPECT_EQ(own_samples(nullptr).counted, 0);
}

TEST(CallOwnShare, StopsOnlyWhenTheIntervalClearsTheLine) {
  EXPECT_EQ(call_own_share(15, 100), ShareCall::above);
  EXPECT_EQ(call_own_share(60, 100), ShareCall::above);
  // 3 own samples of 140: what the old rule (stop at 3 own samples) stopped on and rejected an
  // honest GEMM + epilogue with (CI, 2026-12-04); now it samples on.
  EXPECT_EQ(call_own_share(3, 140), ShareCall::undecided);
  EXPECT_EQ(call_own_share(5, 100), ShareCall::undecided);
  EXPECT_EQ(call_own_share(3, 100), ShareCall::undecided) << "a 1.3% wrapper could show 3 of 100";
  EXPECT_EQ(call_own_share(0, 100), ShareCall::undecided);
  EXPECT_EQ(call_own_share(0, 300), ShareCall::below);
  EXPECT_EQ(call_own_share(2, 150), ShareCall::undecided);
  EXPECT_EQ(call_own_share(2, 1000), ShareCall::below);
  EXPECT_EQ(call_own_share(10, 20), ShareCall::above) << "few samples outside libm can still be clearly own";
  EXPECT_EQ(call_own_share(0, 40), ShareCall::undecided) << "below kMinComputeSamples nothing is rejected";
  EXPECT_EQ(call_own_share(0, 0), ShareCall::undecided);
  EXPECT_EQ(call_own_share(5, 3), ShareCall::undecided);
}

// The worker's schedule (src/worker/audit.cc): a look every 20 samples from 100 on, else the
// point estimate at the budget (2 s of CPU time: 500 samples at a 250 Hz tick), on simulated
// samples that fall in own code with probability `share`. Returns how often the share passes.
double simulated_pass_rate(double share, int runs, std::mt19937& rng) {
  constexpr int kBudget = 500;
  std::bernoulli_distribution own(share);
  int passed = 0;
  for (int r = 0; r < runs; ++r) {
    int64_t k = 0;
    std::optional<bool> pass;
    for (int n = 1; n <= kBudget && !pass; ++n) {
      k += own(rng) ? 1 : 0;
      if (n >= 100 && n % 20 == 0) {
        ShareCall c = call_own_share(k, n);
        if (c != ShareCall::undecided) pass = c == ShareCall::above;
      }
    }
    if (!pass) pass = static_cast<double>(k) / kBudget >= kMinOwnShare;
    passed += *pass ? 1 : 0;
  }
  return static_cast<double>(passed) / runs;
}

TEST(CallOwnShare, HonestSmallSharesPassAndWrappersDoNot) {
  std::mt19937 rng(20261204);
  // Measured with a fixed seed; the rates the rule gives are 1.1% wrong at 5% and 0.25% at
  // 1.3% (4000 runs each). The old rule rejected an honest 5% share about once in eight.
  EXPECT_GE(simulated_pass_rate(0.05, 2000, rng), 0.97);
  EXPECT_EQ(simulated_pass_rate(0.10, 2000, rng), 1.0);
  EXPECT_LE(simulated_pass_rate(0.013, 2000, rng), 0.01);
  EXPECT_EQ(simulated_pass_rate(0.0, 500, rng), 0.0);
}

TEST(RuntimeFindings, TooFewSamplesDecideNothing) {
  json compute = cpu_compute(sampling(json::array(
      {{{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", kMinComputeSamples - 1}}})));
  EXPECT_TRUE(runtime_findings(json::object(), json::array(), nullptr, compute).empty());
}

// An audit that could not decide is said so (and re-run, then rejected, by the supervisor).
TEST(AuditUndecided, DisturbedStarvedOrTooFewSamplesAreUndecided) {
  auto obs = [](int64_t own, int64_t lib, double cpu_ms, int64_t fired) {
    return json{{"method", "cpu-sampling"}, {"calls", 100}, {"cpu_ms", cpu_ms}, {"fired", fired},
                {"samples", json::array({{{"object", "/ext/x.so"}, {"own_object", true}, {"symbol", "relu"}, {"count", own}},
                                         {{"object", "/lib/libtorch_cpu.so"}, {"own_object", false}, {"count", lib}}})}};
  };
  // A normal audit: 300 samples in 1200 ms of CPU (one per 4 ms tick).
  json ok = obs(30, 270, 1200, 300);
  EXPECT_EQ(audit_undecided(ok, cpu_compute(ok)), "");
  // The sampler found disarmed after a call.
  json disturbed = ok;
  disturbed["disturbed"] = "ITIMER_PROF re-armed with an interval of 0 us";
  EXPECT_NE(audit_undecided(disturbed, cpu_compute(disturbed)).find("disturbed"), std::string::npos);
  // Starved: 20 firings in 2000 ms of CPU (at least 50 expected).
  json starved = obs(0, 20, 2000, 20);
  EXPECT_NE(audit_undecided(starved, cpu_compute(starved)).find("fired 20 times"), std::string::npos);
  // Too few samples in a short audit (not starved: 30 firings in 150 ms).
  json few = obs(0, 30, 150, 30);
  EXPECT_NE(audit_undecided(few, cpu_compute(few)).find("fewer than the 50"), std::string::npos);
  // Math samples count toward deciding: an honest erf loop is not undecided.
  json math = {{"method", "cpu-sampling"}, {"calls", 10}, {"cpu_ms", 1000.0}, {"fired", 250},
               {"samples", json::array({{{"object", "/usr/lib/libm.so.6"}, {"own_object", false}, {"count", 240}},
                                        {{"object", "/ext/x.so"}, {"own_object", true}, {"symbol", "gelu"}, {"count", 10}}})}};
  EXPECT_EQ(audit_undecided(math, cpu_compute(math)), "");
  // Not a CPU sampling audit (the GPU's, or not measured): not this rule's to say.
  json gpu = {{"method", "not_measured"}, {"reason", "GPU"}};
  EXPECT_EQ(audit_undecided(gpu, cpu_compute(gpu)), "");
}

TEST(RuntimeFindings, BusyThreadRejectsIdleThreadWarns) {
  json busy = {{"threads", json::array({{{"tid", 7}, {"name", "python"}, {"state", "S"}, {"cpu_ms_after", 40.0},
                                         {"exited", true}, {"window_ms", 300.0}}})}};
  json f = runtime_findings(busy, json::array(), nullptr, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(findings_rules(f)[0], "threads_alive:reject");
  EXPECT_EQ(f[0]["cheat"], "T2");
  json running = {{"threads", json::array({{{"tid", 8}, {"state", "R"}, {"cpu_ms_after", 0.0}}})}};
  EXPECT_EQ(findings_rules(runtime_findings(running, json::array(), nullptr, nullptr))[0], "threads_alive:reject");
  json idle = {{"threads", json::array({{{"tid", 9}, {"state", "S"}, {"cpu_ms_after", 0.2}}})}};
  EXPECT_EQ(findings_rules(runtime_findings(idle, json::array(), nullptr, nullptr))[0], "threads_alive:warn");
}

TEST(RuntimeFindings, AliasingRejectedUnlessTheReferenceAliasesToo) {
  json audit = {{"aliases", json::array({{{"output", 0}, {"input", 1}}})}};
  json f = runtime_findings(audit, json::array(), nullptr, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(findings_rules(f)[0], "output_aliases_input:reject");
  EXPECT_EQ(f[0]["cheat"], "T3");
  EXPECT_TRUE(runtime_findings(audit, json::array({{{"output", 0}, {"input", 1}}}), nullptr, nullptr).empty());
  EXPECT_EQ(runtime_findings(audit, json::array({{{"output", 0}, {"input", 0}}}), nullptr, nullptr).size(), 1u);
}

TEST(RuntimeFindings, DifferentRepeatRejectsT16) {
  json audit = {{"determinism", json::array({{{"output", 0}, {"passed", false}, {"reason", "NaN at [3]"}}})}};
  json f = runtime_findings(audit, json::array(), nullptr, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(findings_rules(f)[0], "nondeterministic:reject");
  EXPECT_EQ(f[0]["cheat"], "T16");
  EXPECT_NE(f[0]["evidence"].get<std::string>().find("NaN at [3]"), std::string::npos);
  json count = {{"determinism_note", "the repeat returned 2 output(s), the first call 1"}};
  EXPECT_EQ(findings_rules(runtime_findings(count, json::array(), nullptr, nullptr))[0], "nondeterministic:reject");
}

TEST(RuntimeFindings, SameStorageOldOutputRejectsT5) {
  json audit = {{"same_as_previous", json::array({{{"output", 0}, {"equal", true}}})}};
  json f = runtime_findings(audit, json::array(), {{"passed", false}, {"reason", "max abs error 0.9"}}, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(findings_rules(f)[0], "stale_output:reject");
  EXPECT_EQ(f[0]["cheat"], "T5");
  EXPECT_NE(f[0]["message"].get<std::string>().find("bitwise the previous call's"), std::string::npos);
  EXPECT_TRUE(runtime_findings(audit, json::array(), {{"passed", true}}, nullptr).empty());
}

}  // namespace runtime_audit_test
}  // namespace kbv

// ---------------------------------------------------------------------------------------------
// Issue 29: the ablation decides whether own code reaches the output; the sampled share of the
// whole forward is a measurement, and the replayed own calls' share catches forwarding wrappers.
namespace kbv {
namespace runtime_audit_test {

json ablation(int64_t own_calls, int64_t replaced, int64_t overwritten, std::vector<std::pair<int64_t, int64_t>> outs) {
  json per = json::array();
  for (size_t i = 0; i < outs.size(); ++i)
    per.push_back({{"output", i}, {"changed", outs[i].first}, {"numel", outs[i].second}});
  return {{"ran", true},
          {"functions", {"ext.fused"}},
          {"own_calls", own_calls},
          {"outputs_replaced", replaced},
          {"elements_overwritten", overwritten},
          {"outputs", per}};
}

TEST(OwnReach, OutputChangedBeyondToleranceIsReached) {
  ReachCall r = own_reach(ablation(1, 1, 0, {{4096, 4096}}));
  EXPECT_EQ(r.reach, Reach::reached) << r.why;
  EXPECT_DOUBLE_EQ(r.fraction, 1.0);
  // One element of a million is still own code reaching the output (a measurement, not a verdict).
  r = own_reach(ablation(3, 0, 1, {{1, 1000000}}));
  EXPECT_EQ(r.reach, Reach::reached) << r.why;
  EXPECT_DOUBLE_EQ(r.fraction, 1e-6);
  // Of two outputs, the one own code reaches gives the fraction.
  r = own_reach(ablation(1, 1, 0, {{0, 100}, {10, 10}}));
  EXPECT_EQ(r.reach, Reach::reached);
  EXPECT_DOUBLE_EQ(r.fraction, 1.0);
}

TEST(OwnReach, NothingChangedIsNotReached) {
  // A dummy call whose result is dropped, multiplied by 0 or scrubbed: poisoned, nothing changed.
  ReachCall r = own_reach(ablation(1, 1, 0, {{0, 4096}}));
  EXPECT_EQ(r.reach, Reach::not_reached);
  EXPECT_NE(r.why.find("none of the 4096 output element(s) changed"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("ext.fused"), std::string::npos) << r.why;
  // Called, but returned no tensor and wrote none.
  r = own_reach(ablation(2, 0, 0, {{5, 4096}}));
  EXPECT_EQ(r.reach, Reach::not_reached) << "outputs cannot change through nothing";
  EXPECT_NE(r.why.find("returned no tensor"), std::string::npos) << r.why;
  // Never called during forward.
  r = own_reach(ablation(0, 0, 0, {{0, 4096}}));
  EXPECT_EQ(r.reach, Reach::not_reached);
  EXPECT_NE(r.why.find("was called during forward"), std::string::npos) << r.why;
}

TEST(OwnReach, RaisingOrFewerOutputsIsReached) {
  json a = ablation(1, 1, 0, {});
  a.erase("outputs");
  a["raised"] = "ValueError: bad values";
  EXPECT_EQ(own_reach(a).reach, Reach::reached);
  json b = ablation(1, 1, 0, {});
  b["outputs_note"] = "1 output(s) under poisoning, 2 without";
  EXPECT_EQ(own_reach(b).reach, Reach::reached);
}

TEST(OwnReach, AnAblationThatDidNotRunDecidesNothing) {
  EXPECT_EQ(own_reach(nullptr).reach, Reach::not_applicable);
  ReachCall r = own_reach({{"ran", false}, {"reason", "no pybind11 function of a module loaded from the extension folder was found"}});
  EXPECT_EQ(r.reach, Reach::not_applicable);
  EXPECT_NE(r.why.find("no pybind11 function"), std::string::npos);
  json e = ablation(1, 1, 0, {{0, 10}});
  e["error"] = "poisoning an own call's results: out of memory";
  EXPECT_EQ(own_reach(e).reach, Reach::not_applicable) << "a poisoning that failed proves nothing";
}

TEST(RuntimeFindings, AblationNotReachedRejectsEvenWithOwnSamples) {
  // A dummy own kernel burning CPU: plenty of own samples, nothing reaches the output.
  json compute = cpu_compute(sampling(json::array(
      {{{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z5dummyv"}, {"count", 90}},
       {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 10}}})));
  json audit = {{"ablation", ablation(1, 1, 0, {{0, 4096}})}};
  EXPECT_EQ(findings_rules(runtime_findings(audit, json::array(), nullptr, compute)),
            json::array({"no_custom_compute:reject"}));
  // The same on the GPU, where the record's compute is CUPTI's (not a CPU sampling).
  EXPECT_EQ(findings_rules(runtime_findings(audit, json::array(), nullptr, nullptr)),
            json::array({"no_custom_compute:reject"}));
}

TEST(RuntimeFindings, HonestEpilogueWithATinyForwardShareIsNotRejected) {
  // Replayed alone, the epilogue is all own code; of the forward it is 0.5% (a measurement).
  json obs = sampling(json::array({{{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z8epiloguev"}, {"count", 100}}}));
  obs["scope"] = "own_calls";
  obs["forward_cpu_ms"] = 200.0;
  obs["own_call_cpu_ms"] = 1.0;
  json compute = cpu_compute(obs);
  EXPECT_EQ(compute["scope"], "own_calls");
  EXPECT_DOUBLE_EQ(compute["forward_own_share"].get<double>(), 0.005);
  json audit = {{"ablation", ablation(1, 1, 0, {{4096, 4096}})}};
  EXPECT_TRUE(runtime_findings(audit, json::array(), nullptr, compute).empty());
}

TEST(RuntimeFindings, ForwardingWrapperRejectedByItsReplayedShare) {
  // A C++ wrapper handing its work to at::matmul: its result is the output (the ablation says
  // reached), but replayed alone it spends ~0% in own code.
  json obs = sampling(json::array(
      {{{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z7wrapperN2at6TensorES0_"}, {"count", 1}},
       {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 299}}}));
  obs["scope"] = "own_calls";
  json audit = {{"ablation", ablation(1, 1, 0, {{4096, 4096}})}};
  json f = runtime_findings(audit, json::array(), nullptr, cpu_compute(obs));
  ASSERT_EQ(findings_rules(f), json::array({"no_custom_compute:reject"}));
  EXPECT_NE(f[0]["message"].get<std::string>().find("replay(s) of its own extension calls"), std::string::npos)
      << f[0]["message"];
}

TEST(RuntimeFindings, ATokenOwnSliceIsRejectedOnWhatItReachesWhateverItsShare) {
  // PyTorch computes the output, an own call returns one recomputed element (out[0, 0]): reached,
  // 1 of 4096. Rejected on the ablation alone, with the replayed share above the line (a loaded
  // machine's 2 of 50 samples), below it, or on the GPU (no CPU sampling).
  json audit = {{"ablation", ablation(1, 1, 0, {{1, 4096}})}};
  EXPECT_EQ(own_reach(audit["ablation"]).reach, Reach::reached);
  for (int own : {0, 1, 2, 10}) {
    json obs = sampling(json::array(
        {{{"object", "/x/own.so"}, {"own_object", true}, {"symbol", "_Z5slicev"}, {"count", own}},
         {{"object", "/t/libtorch_cpu.so"}, {"own_object", false}, {"symbol", ""}, {"count", 50 - own}}}));
    obs["scope"] = "own_calls";
    json f = runtime_findings(audit, json::array(), nullptr, cpu_compute(obs));
    ASSERT_EQ(findings_rules(f), json::array({"no_custom_compute:reject"})) << own << " own samples: " << f.dump();
    EXPECT_NE(f[0]["message"].get<std::string>().find("depend on the candidate's own code (fewer than 1%)"),
              std::string::npos)
        << f[0]["message"];
  }
  EXPECT_EQ(findings_rules(runtime_findings(audit, json::array(), nullptr, nullptr)),
            json::array({"no_custom_compute:reject"}));
  // Of two outputs, a small one own code computes in full is not a token.
  json two = {{"ablation", ablation(2, 2, 0, {{1, 4096}, {16, 16}})}};
  EXPECT_TRUE(runtime_findings(two, json::array(), nullptr, nullptr).empty());
}

TEST(RuntimeFindings, TheTokenLineLeavesInPlaceWritesAndLargerSlicesAlone) {
  // An honest in-place clamp that changed 3 of a million elements: the ablation overwrote only
  // those, so few change; in-place writes are not judged by reach.
  json in_place = {{"ablation", ablation(1, 0, 3, {{3, 1000000}})}};
  EXPECT_TRUE(runtime_findings(in_place, json::array(), nullptr, nullptr).empty());
  // A returned tensor and an in-place write in the same forward: not judged by reach either.
  json mixed = {{"ablation", ablation(2, 1, 3, {{3, 1000000}})}};
  EXPECT_TRUE(runtime_findings(mixed, json::array(), nullptr, nullptr).empty());
  // One row of 16 (6.25%): above the line (docs/POLICY.md: a line an attacker can reach).
  json row = {{"ablation", ablation(1, 1, 0, {{256, 4096}})}};
  EXPECT_TRUE(runtime_findings(row, json::array(), nullptr, nullptr).empty());
  // Just under and at the line.
  json under = {{"ablation", ablation(1, 1, 0, {{99, 10000}})}};
  EXPECT_EQ(findings_rules(runtime_findings(under, json::array(), nullptr, nullptr)),
            json::array({"no_custom_compute:reject"}));
  json at = {{"ablation", ablation(1, 1, 0, {{100, 10000}})}};
  EXPECT_TRUE(runtime_findings(at, json::array(), nullptr, nullptr).empty());
  // Forward raised under the poison: reached, never a token.
  json raised = ablation(1, 1, 0, {});
  raised.erase("outputs");
  raised["raised"] = "ValueError: bad values";
  EXPECT_TRUE(runtime_findings({{"ablation", raised}}, json::array(), nullptr, nullptr).empty());
}

}  // namespace runtime_audit_test
}  // namespace kbv
