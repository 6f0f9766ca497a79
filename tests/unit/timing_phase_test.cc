#include "supervisor/timing_phase.h"
#include "supervisor/timing_parts.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "supervisor/verdict.h"
#include "util/host_load.h"
#include "util/sched.h"

namespace kbv {
namespace timing_phase_test {

using nlohmann::json;

Environment env(const std::string& name) {
  Environment e;
  e.torch_version = "2.11.0";
  e.python_version = "3.11.7";
  e.device = "cuda";
  e.device_name = name;
  return e;
}

TEST(TimingPhase, BaselineKeySeparatesWhatChangesATime) {
  EvalOptions o;
  std::string k = baseline_key("code", o, env("NVIDIA H200"), "tf32");
  EXPECT_EQ(k, baseline_key("code", o, env("NVIDIA H200"), "tf32"));
  EXPECT_NE(k, baseline_key("code", o, env("NVIDIA H200"), "fp32"));
  EXPECT_NE(k, baseline_key("code ", o, env("NVIDIA H200"), "tf32"));
  EXPECT_NE(k, baseline_key("code", o, env("NVIDIA H100 80GB HBM3"), "tf32"));
  EvalOptions capped = o;
  capped.protocol.timing.rule.time_cap_s = 5;
  EXPECT_NE(k, baseline_key("code", capped, env("NVIDIA H200"), "tf32"));
  // Which baselines a run asks for, and the candidate's spot checks, do not change a baseline.
  EvalOptions more = o;
  more.protocol.timing.baselines = {"tf32", "fp32", "compile"};
  more.protocol.timing.spot_per_output = 5;
  EXPECT_EQ(k, baseline_key("code", more, env("NVIDIA H200"), "tf32"));
  // Nor where the correctness checks draw: timed calls draw on the device (kMeasuredDraw) under
  // every protocol.
  EvalOptions host = o;
  host.protocol.input_draw = "host";
  EXPECT_EQ(k, baseline_key("code", host, env("NVIDIA H200"), "tf32"));
}

TEST(TimingPhase, BaselineKeySeparatesTheLaunchHold) {
  // The launch hold changes what a GPU sample measures: a baseline timed with another hold is
  // another baseline. The CPU engine has no hold, so there it keys nothing.
  EvalOptions o;
  EXPECT_DOUBLE_EQ(o.protocol.timing.launch_hold_us, kDefaultLaunchHoldUs);
  EXPECT_DOUBLE_EQ(o.protocol.timing.to_json()["launch_hold_us"].get<double>(), kDefaultLaunchHoldUs);
  const std::string held = baseline_key("code", o, env("NVIDIA H200"), "tf32");
  EvalOptions none = o, longer = o;
  none.protocol.timing.launch_hold_us = 0;
  longer.protocol.timing.launch_hold_us = 2 * kDefaultLaunchHoldUs;
  EXPECT_NE(held, baseline_key("code", none, env("NVIDIA H200"), "tf32"));
  EXPECT_NE(held, baseline_key("code", longer, env("NVIDIA H200"), "tf32"));
  Environment cpu = env("cpu");
  cpu.device = "cpu";
  EXPECT_EQ(baseline_key("code", o, cpu, "tf32"), baseline_key("code", none, cpu, "tf32"))
      << "the CPU engine holds nothing: its baselines are the same with any hold";
}

TEST(TimingPhase, RuleRequestCarriesTheLaunchHold) {
  EvalOptions o;
  o.protocol.timing.launch_hold_us = 350;
  msg::TimeReferenceRequest r;
  r.timing = rule_request(o);
  const json req = msg::to_json(r);
  EXPECT_DOUBLE_EQ(req.at("launch_hold_us").get<double>(), 350) << req.dump();
  EXPECT_TRUE(req.contains("rule")) << req.dump();
}

// CPU thread parity: the budget (as resolved on this host) keys a CPU baseline, and every timing
// request carries its thread count; the GPU baselines do not depend on it.
TEST(TimingPhase, TheCpuThreadBudgetKeysCpuBaselinesAndReachesTheWorkers) {
  EvalOptions one, all;
  EXPECT_EQ(one.protocol.timing.cpu_threads, kDefaultCpuThreads);
  EXPECT_EQ(one.protocol.timing.to_json()["cpu_threads"].get<int>(), kDefaultCpuThreads);
  all.protocol.timing.cpu_threads = 0;
  one.cpu = resolve_cpu_budget(one);
  all.cpu = resolve_cpu_budget(all);
  Environment cpu = env("cpu");
  cpu.device = "cpu";
  const bool several = affinity_of(0).size() > 1;
  EXPECT_EQ(baseline_key("code", one, cpu, "fp32") != baseline_key("code", all, cpu, "fp32"), several)
      << "1 thread and every CPU are other baselines where there is more than one CPU";
  EvalOptions asked_all = all;
  asked_all.protocol.timing.cpu_threads = static_cast<int>(affinity_of(0).size());
  asked_all.cpu = resolve_cpu_budget(asked_all);
  EXPECT_EQ(baseline_key("code", all, cpu, "fp32"), baseline_key("code", asked_all, cpu, "fp32"))
      << "0 is every CPU: keyed on the count it resolves to";
  EXPECT_EQ(baseline_key("code", one, env("NVIDIA H200"), "tf32"), baseline_key("code", all, env("NVIDIA H200"), "tf32"))
      << "the GPU engine does not use the CPU budget";
  msg::TimeReferenceRequest r;
  r.timing = rule_request(one);
  EXPECT_EQ(msg::to_json(r).at("threads").get<int>(), 1) << msg::to_json(r).dump();
  r.timing = rule_request(all);
  EXPECT_EQ(msg::to_json(r).at("threads").get<int>(), static_cast<int>(affinity_of(0).size()));
}

// The budget is resolved once per evaluation (EvalOptions::cpu): the key and the requests read that
// value, not this process's affinity again (which may have changed since).
TEST(TimingPhase, TheResolvedCpuBudgetIsTheOneRead) {
  EvalOptions o;
  o.protocol.timing.cpu_threads = 0;  // every CPU, were it resolved again here
  o.cpu = {3, {5, 6, 7}};             // what the evaluation's lease resolved
  msg::TimeReferenceRequest r;
  r.timing = rule_request(o);
  EXPECT_EQ(msg::to_json(r).at("threads").get<int>(), 3) << msg::to_json(r).dump();
  Environment cpu = env("cpu");
  cpu.device = "cpu";
  EvalOptions four = o;
  four.cpu = {4, {4, 5, 6, 7}};
  EXPECT_NE(baseline_key("code", o, cpu, "fp32"), baseline_key("code", four, cpu, "fp32"));
  EvalOptions asked_three = o;
  asked_three.protocol.timing.cpu_threads = 3;
  EXPECT_EQ(baseline_key("code", o, cpu, "fp32"), baseline_key("code", asked_three, cpu, "fp32"))
      << "keyed on the resolved count, not on the count asked";
  EvalOptions off;
  off.protocol.timing.enabled = false;
  EXPECT_EQ(resolve_cpu_budget(off).threads, 0) << "timing off: no budget, the workers' threads as they are";
}

TEST(TimingPhase, StatsFromRawReply) {
  msg::TimeReply reply;
  reply.samples_ms = {1.0, 3.0, 2.0};
  reply.discarded_ms = {9.0};
  reply.overhead_ms = 0.004;
  Stats s = stats_of_reply(reply);
  EXPECT_EQ(s.samples, 3);
  EXPECT_EQ(s.discarded, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(s.overhead_ms, 0.004);
  msg::TimeReply forged;
  EXPECT_NE(msg::from_json(json{{"samples_ms", {"x", 2.0}}}, forged), "") << "non-numbers make a malformed reply";
  EXPECT_FALSE(s.to_json().contains("host_call_ms")) << "a reply without it (the CPU, an old cache) states none";
  reply.host_call_ms = 0.031;
  EXPECT_DOUBLE_EQ(stats_of_reply(reply).to_json().at("host_call_ms").get<double>(), 0.031);
  reply.host_call_ms = -1;
  EXPECT_FALSE(stats_of_reply(reply).to_json().contains("host_call_ms")) << "the CPU's -1 is not a time";
}

TEST(TimingPhase, SummaryLine) {
  auto timing_summary = [](const json& j) { return kbv::timing_summary(record_from_json(j).record); };
  EXPECT_EQ(timing_summary(json{{"verdict", "correct"}}), "");
  json r = {{"timing",
             {{"method", "steady-clock"},
              {"candidate", {{"median_ms", 0.5}, {"samples", 12}, {"rse", 0.004}}},
              {"speedup", {{"tf32", 2.0}}},
              {"speed_of_light", 0.25}}}};
  EXPECT_EQ(timing_summary(r), "time 0.5 ms (median of 12, rse 0.40%, steady-clock); speedup 2.000x vs tf32; "
                               "25.0% of the speed of light");
  EXPECT_EQ(timing_summary(json{{"timing", {{"error", "drawing the timing inputs: boom"}}}}),
            "not timed: drawing the timing inputs: boom");
  // With intervals: what each says; and the record's timing warnings (record/trust.h).
  json ci = r;
  ci["timing"]["speedup"]["fp32"] = 1.01;
  ci["timing"]["speedup_ci95"] = {{"tf32", {1.8, 2.2}}, {"fp32", {0.97, 1.05}}};
  ci["timing"]["clock"] = {{"throttled_kept", 4}};
  ci["findings"] = json::array({{{"rule", "timing_host_busy"}, {"severity", "warn"}, {"message", "busy"}}});
  EXPECT_EQ(timing_summary(ci),
            "time 0.5 ms (median of 12, rse 0.40%, steady-clock); speedup 1.010x [0.970, 1.050] vs fp32 (no "
            "measurable difference), 2.000x [1.800, 2.200] vs tf32 (faster); 25.0% of the speed of light; timing "
            "warnings: host busy, throttled");
}

TEST(TimingPhase, SummaryLineShowsTheIntervalAndNoMeasurableDifference) {
  auto timing_summary = [](const json& j) { return kbv::timing_summary(record_from_json(j).record); };
  json r = {{"timing",
             {{"method", "steady-clock"},
              {"candidate", {{"median_ms", 0.5}, {"samples", 60}, {"rse", 0.004}}},
              {"speedup", {{"fp32", 1.01}, {"tf32", 2.0}}},
              {"speedup_ci95", {{"fp32", {0.97, 1.04}}, {"tf32", {1.9, 2.1}}}},
              {"pairs", 6}}}};
  EXPECT_EQ(timing_summary(r), "time 0.5 ms (median of 60, rse 0.40%, steady-clock); speedup 1.010x [0.970, 1.040] "
                               "vs fp32 (no measurable difference), 2.000x [1.900, 2.100] vs tf32 (faster); 6 paired "
                               "rounds");
  r["timing"]["speedup_ci95"]["tf32"] = {0.5, 0.9};
  r["timing"]["speedup"]["tf32"] = 0.7;
  EXPECT_EQ(timing_summary(r).find("(no measurable difference), 0.700x [0.500, 0.900] vs tf32 (slower);") != std::string::npos,
            true)
      << timing_summary(r);
}

TEST(TimingPhase, PairedRoundsAreTheKbvDefaultAndUnpairedUpstream) {
  EXPECT_EQ(Protocol{}.timing.pairs, kDefaultTimingPairs);
  EXPECT_EQ(Protocol{}.to_json()["timing"]["pairs"], kDefaultTimingPairs);
  EXPECT_EQ(kernelbench_protocol().timing.pairs, 0) << "upstream times the candidate once, then the baseline";
  Protocol q;
  q.timing.pairs = 2;
  EXPECT_NE(protocol_hash(q, json::object()), protocol_hash(Protocol{}, json::object()));
  // A cached baseline is an unpaired one: its key does not depend on the pairs.
  EvalOptions o, paired = o;
  paired.protocol.timing.pairs = 3;
  o.protocol.timing.pairs = 0;
  EXPECT_EQ(baseline_key("code", o, env("NVIDIA H200"), "tf32"), baseline_key("code", paired, env("NVIDIA H200"), "tf32"));
}

TEST(TimingPhase, ProtocolCarriesTimingKnobs) {
  Protocol p;
  p.timing.rule.rse_target = 0.01;
  json j = p.to_json();
  EXPECT_EQ(j["timing"]["rule"]["rse_target"], 0.01);
  EXPECT_EQ(j["timing"]["baselines"], json({"tf32", "fp32"}));
  Protocol q;
  EXPECT_NE(protocol_hash(p, json::object()), protocol_hash(q, json::object()));
}

TEST(TimingPhase, ABaselineTimedBesideBusyCoresIsNotCached) {
  unsetenv("KBV_HOST_BUSY_CORES");
  EXPECT_TRUE(baseline_cacheable(json{{"stats", {{"median_ms", 0.07}}}})) << "the GPU records no host load";
  EXPECT_TRUE(baseline_cacheable(json{{"stats", {{"median_ms", 0.07}, {"host_other_cores", 0.04}}}}));
  EXPECT_FALSE(baseline_cacheable(json{{"stats", {{"median_ms", 2.1}, {"host_other_cores", 0.49}}}}))
      << "measured: one busy loop beside the 2-core CI machine's ATen threads got 0.49-0.71 cores and "
         "made ReLU's baseline 20-40x slower";
  EXPECT_FALSE(baseline_cacheable(json{{"stats", {{"host_other_cores", kHostBusyCores}}}}));
}


// A CPU baseline's round trips (TimeReferenceRequest::marks) are answered in the candidate's call
// order: its draw (fresh inputs), then its start and end marks; anything else is refused with the
// ask and the call it came in.
TEST(TimingPhase, BaselineMarksAreAnsweredInCallOrder) {
  auto ask = [](int64_t index, const std::string& mark) { return msg::to_json(msg::DrawAsk{index, mark}); };
  BaselineMarks fresh(true);
  for (int64_t i = 0; i < 3; ++i)
    for (const char* m : {"", "start", "end"}) EXPECT_TRUE(msg::reply_ok(fresh.answer(ask(i, m)))) << i << m;
  EXPECT_EQ(fresh.order.calls, 3);
  const json refused = fresh.answer(ask(3, "start"));  // call 3's draw was not asked for
  ASSERT_FALSE(msg::reply_ok(refused));
  EXPECT_NE(msg::failure_of(refused).message.find("for call 3"), std::string::npos) << refused.dump();

  BaselineMarks sets(false);  // input sets: no draws, marks only
  EXPECT_FALSE(msg::reply_ok(sets.answer(ask(0, ""))));
  BaselineMarks sets2(false);
  EXPECT_TRUE(msg::reply_ok(sets2.answer(ask(0, "start"))));
  EXPECT_FALSE(msg::reply_ok(sets2.answer(ask(1, "end")))) << "an end mark for another call";
  EXPECT_FALSE(msg::reply_ok(sets2.answer(json{{"op", "draw"}, {"index", "x"}}))) << "a malformed ask";
  BaselineMarks sets3(false);
  EXPECT_TRUE(msg::reply_ok(sets3.answer(ask(0, "start"))));
  EXPECT_TRUE(msg::reply_ok(sets3.answer(ask(0, "end"))));
  EXPECT_TRUE(msg::reply_ok(sets3.answer(ask(1, "start"))));
}

}  // namespace timing_phase_test
}  // namespace kbv
