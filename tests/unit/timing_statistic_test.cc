// The timing knobs a protocol sets (TimingProtocol::statistic, l2_flush, loop, rule.calls) and
// Protocol::cast_init_inputs: their values under each protocol, the hash, the wire, the stopping
// rule and the statistic `runtime` is (docs/PROTOCOLS.md, docs/TIMING.md).
#include "measure/statistic.h"

#include <gtest/gtest.h>

#include <vector>

#include "proto/messages.h"
#include "protocol/registry.h"
#include "supervisor/timing_phase.h"

namespace kbv {
namespace timing_statistic_test {

using nlohmann::json;

Protocol named(const std::string& name) {
  auto p = protocol_by_name(name);
  if (auto* error = std::get_if<std::string>(&p)) ADD_FAILURE() << *error;
  return std::get_if<Protocol>(&p) ? std::get<Protocol>(p) : Protocol{};
}

TEST(TimingKnobs, VerifiedTimesAsUpstreamsTimeExecutionWithCudaEvent) {
  const Protocol v = named("kernelbench-verified");
  EXPECT_EQ(v.timing.rule.warmup, 3) << "num_warmup = 3";
  EXPECT_EQ(v.timing.rule.calls, 100) << "num_perf_trials = 100";
  EXPECT_EQ(v.timing.rule.max_discards, 0) << "every trial kept";
  EXPECT_EQ(v.timing.statistic, "mean") << "runtime = get_timing_stats(...)[\"mean\"]";
  EXPECT_FALSE(v.timing.l2_flush);
  EXPECT_EQ(v.timing.loop, "upstream");
  EXPECT_EQ(v.timing.launch_hold_us, 0);
  EXPECT_FALSE(v.timing.fresh);
  EXPECT_EQ(v.timing.sets, 1);
  EXPECT_EQ(v.timing.pairs, 0);
  EXPECT_TRUE(v.cast_init_inputs) << "init_inputs through _process_input_tensor";
  const json t = v.to_json()["timing"];
  EXPECT_EQ(t["statistic"], "mean");
  EXPECT_EQ(t["l2_flush"], false);
  EXPECT_EQ(t["loop"], "upstream");
  EXPECT_EQ(t["rule"]["calls"], 100);
  EXPECT_EQ(v.to_json()["cast_init_inputs"], true);
  // KernelBench main casts init inputs the same way; the paper's harness passed them as drawn.
  EXPECT_TRUE(named("kernelbench-main").cast_init_inputs);
  EXPECT_FALSE(named("kernelbench-paper").cast_init_inputs);
}

TEST(TimingKnobs, KbvKeepsItsFlushMedianAndStoppingRuleAndItsHash) {
  const Protocol k = named("kbv");
  EXPECT_EQ(k.timing.statistic, "median");
  EXPECT_TRUE(k.timing.l2_flush);
  EXPECT_EQ(k.timing.loop, "kbv");
  EXPECT_EQ(k.timing.rule.calls, 0);
  EXPECT_FALSE(k.cast_init_inputs);
  // kbv's knobs are not written, so kbv's protocol JSON (hence its hash, the stored records' resume
  // keys and the cached baselines' keys) is what it was before the knobs existed.
  const json j = k.to_json();
  for (const char* key : {"statistic", "l2_flush", "loop"}) EXPECT_FALSE(j["timing"].contains(key)) << key;
  EXPECT_FALSE(j["timing"]["rule"].contains("calls"));
  EXPECT_FALSE(j.contains("cast_init_inputs"));
  EXPECT_EQ(j["timing"]["rule"].size(), 7u) << j["timing"]["rule"].dump();
  EXPECT_EQ(j["timing"].size(), 13u) << j["timing"].dump();
}

TEST(TimingKnobs, EachKnobChangesTheProtocolHash) {
  const json env = {{"torch_version", "2.11.0"}, {"device_name", "cpu"}};
  const Protocol v = named("kernelbench-verified");
  const std::string h = protocol_hash(v, env);
  std::vector<Protocol> changed(5, v);
  changed[0].timing.statistic = "median";
  changed[1].timing.l2_flush = true;
  changed[2].timing.loop = "kbv";
  changed[3].timing.rule.calls = 50;
  changed[4].cast_init_inputs = false;
  for (size_t i = 0; i < changed.size(); ++i) EXPECT_NE(h, protocol_hash(changed[i], env)) << "knob " << i;
  Protocol k;
  const std::string hk = protocol_hash(k, env);
  k.timing.statistic = "mean";
  EXPECT_NE(hk, protocol_hash(k, env));
  k = Protocol{};
  k.timing.l2_flush = false;
  EXPECT_NE(hk, protocol_hash(k, env));
  k = Protocol{};
  k.cast_init_inputs = true;
  EXPECT_NE(hk, protocol_hash(k, env));
}

TEST(TimingKnobs, FixedCallsStopExactlyThereAndNowhereElse) {
  StopRule r;
  r.calls = 100;
  std::vector<double> v(99, 1.0);  // identical samples: the RSE rule alone would have stopped at 10
  EXPECT_EQ(should_stop(r, v, 100.0), StopReason::none) << "neither the RSE nor the time cap stops a fixed loop";
  v.push_back(1.0);
  EXPECT_EQ(should_stop(r, v, 0.0), StopReason::calls);
  EXPECT_STREQ(stop_reason_name(StopReason::calls), "calls");
  r.max_samples = 20;
  v.resize(20);
  EXPECT_EQ(should_stop(r, v, 0.0), StopReason::none) << "the fixed count is the bound, not max_samples";
  StopRule kbv;
  std::vector<double> ten(10, 1.0);
  EXPECT_EQ(should_stop(kbv, ten, 0.0), StopReason::rse) << "without calls, kbv's rule as before";
  // Paired blocks share the calls (rounded up).
  EXPECT_EQ(block_rule(r, 6, true).calls, 17);
  EXPECT_EQ(block_rule(r, 1, true).calls, 100);
  EXPECT_EQ(block_rule(StopRule{}, 6, true).calls, 0);
}

TEST(TimingKnobs, RuntimeIsTheProtocolsStatistic) {
  const std::vector<double> ms = {1.0, 1.0, 1.0, 1.0, 11.0};  // one slow call: mean 3, median 1
  const Stats s = summarize(ms);
  EXPECT_DOUBLE_EQ(statistic_ms(s, "median"), 1.0);
  EXPECT_DOUBLE_EQ(statistic_ms(s, "mean"), 3.0);
  EXPECT_STREQ(statistic_key("mean"), "mean_ms");
  EXPECT_STREQ(statistic_key("median"), "median_ms");
  const Protocol v = named("kernelbench-verified"), k = named("kbv");
  const json rv = runtime_stats_json(s, v.timing, "NVIDIA H100", "cuda:0");
  EXPECT_EQ(rv["statistic"], "mean");
  EXPECT_DOUBLE_EQ(rv["mean"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(rv["median"].get<double>(), 1.0);
  EXPECT_EQ(rv["num_trials"], 5);
  EXPECT_EQ(rv["hardware"], "NVIDIA H100");
  EXPECT_EQ(rv["device"], "cuda:0");
  EXPECT_EQ(rv["loop"],
            "mean of 100 calls after 3 warm-ups, the same inputs each call, no cache flush (upstream's loop: "
            "cuda-event times on the GPU, the inputs not reloaded between calls)");
  const json rk = runtime_stats_json(s, k.timing, "cpu", "cpu");
  EXPECT_EQ(rk["statistic"], "median");
  EXPECT_EQ(rk["loop"],
            "median of the calls kbv's stopping rule took after 3 warm-ups, a fresh draw each call, a cache flush "
            "before each call (kbv's loop: on the GPU the host clock where it disagrees with the events)");
  EXPECT_EQ(runtime_statistic(rv), "mean");
  EXPECT_EQ(runtime_statistic(rk), "median");
  EXPECT_EQ(runtime_statistic(json{{"mean", 2.0}, {"median", 1.0}}), "median") << "older records: the median";
  EXPECT_EQ(runtime_statistic(json::object()), "median");
}

TEST(TimingKnobs, TheWorkersAreToldTheFlushAndTheLoop) {
  EvalOptions o;
  o.protocol = named("kernelbench-verified");
  msg::TimeCandidateRequest r;
  r.timing = rule_request(o);
  json req = msg::to_json(r);
  EXPECT_EQ(req.at("l2_flush"), false) << req.dump();
  EXPECT_EQ(req.at("upstream_loop"), true) << req.dump();
  EXPECT_EQ(req.at("rule").at("calls"), 100) << req.dump();
  msg::TimeCandidateRequest back;
  ASSERT_EQ(msg::from_json(req, back), "");
  EXPECT_FALSE(back.timing.l2_flush);
  EXPECT_TRUE(back.timing.upstream_loop);
  EXPECT_EQ(back.timing.rule.calls, 100);
  o.protocol = named("kbv");
  r.timing = rule_request(o);
  req = msg::to_json(r);
  EXPECT_EQ(req.at("l2_flush"), true);
  EXPECT_EQ(req.at("upstream_loop"), false);
  EXPECT_EQ(req.at("rule").at("calls"), 0);
}

TEST(TimingKnobs, TheReferenceIsToldToCastInitInputs) {
  msg::LoadRequest load;
  load.path = "p.py";
  load.code = "x";
  EXPECT_EQ(msg::to_json(load).at("cast_init_inputs"), false);
  load.cast_init_inputs = true;
  msg::LoadRequest back;
  ASSERT_EQ(msg::from_json(msg::to_json(load), back), "");
  EXPECT_TRUE(back.cast_init_inputs);
}

TEST(TimingKnobs, TheStatisticDoesNotKeyACachedBaseline) {
  // A cached baseline keeps its median and its mean: which one a protocol reads does not re-time it.
  Environment e;
  e.device = "cuda";
  e.device_name = "NVIDIA H100";
  EvalOptions median, mean;
  mean.protocol.timing.statistic = "mean";
  EXPECT_EQ(baseline_key("code", median, e, "tf32"), baseline_key("code", mean, e, "tf32"));
  EvalOptions unflushed;
  unflushed.protocol.timing.l2_flush = false;
  EXPECT_NE(baseline_key("code", median, e, "tf32"), baseline_key("code", unflushed, e, "tf32"));
}

}  // namespace timing_statistic_test
}  // namespace kbv
