#include "supervisor/timing_phase.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace kbv {
namespace {

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
  // KBV_PREQUEUE_US (experimental) changes what a sample measures: its baselines are others, and
  // without it the keys stay those of the caches already written.
  EvalOptions o;
  ::unsetenv("KBV_PREQUEUE_US");
  const std::string off = baseline_key("code", o, env("NVIDIA H200"), "tf32");
  ::setenv("KBV_PREQUEUE_US", "", 1);
  EXPECT_EQ(off, baseline_key("code", o, env("NVIDIA H200"), "tf32")) << "an empty value is no hold";
  for (const char* no_hold : {"0", "abc", "20000", "-5"}) {
    ::setenv("KBV_PREQUEUE_US", no_hold, 1);
    EXPECT_EQ(off, baseline_key("code", o, env("NVIDIA H200"), "tf32")) << "the worker holds nothing for " << no_hold;
  }
  ::setenv("KBV_PREQUEUE_US", "200", 1);
  const std::string held = baseline_key("code", o, env("NVIDIA H200"), "tf32");
  ::setenv("KBV_PREQUEUE_US", "300", 1);
  const std::string longer = baseline_key("code", o, env("NVIDIA H200"), "tf32");
  ::unsetenv("KBV_PREQUEUE_US");
  EXPECT_NE(off, held);
  EXPECT_NE(held, longer);
  EXPECT_EQ(off, baseline_key("code", o, env("NVIDIA H200"), "tf32"));
}

TEST(TimingPhase, PrequeueReadsItsSetting) {
  ::unsetenv("KBV_PREQUEUE_US");
  EXPECT_EQ(prequeue_from_environment().state, "off");
  ::setenv("KBV_PREQUEUE_US", "0", 1);
  EXPECT_EQ(prequeue_from_environment().state, "off");
  ::setenv("KBV_PREQUEUE_US", "200", 1);
  Prequeue p = prequeue_from_environment();
  EXPECT_DOUBLE_EQ(p.us, 200);
  EXPECT_EQ(p.state, "200 us");
  ::setenv("KBV_PREQUEUE_US", "2e5", 1);
  p = prequeue_from_environment();
  EXPECT_DOUBLE_EQ(p.us, 0);
  EXPECT_NE(p.state.find("ignored: KBV_PREQUEUE_US='2e5'"), std::string::npos) << p.state;
  ::setenv("KBV_PREQUEUE_US", "200us", 1);
  EXPECT_DOUBLE_EQ(prequeue_from_environment().us, 0) << "a unit after the number is not read as the number";
  ::unsetenv("KBV_PREQUEUE_US");
}

TEST(TimingPhase, StatsFromRawReply) {
  json reply = {{"samples_ms", {1.0, 3.0, 2.0}}, {"discarded_ms", {9.0}}, {"overhead_ms", 0.004}};
  Stats s = stats_of_reply(reply);
  EXPECT_EQ(s.samples, 3);
  EXPECT_EQ(s.discarded, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(s.overhead_ms, 0.004);
  EXPECT_EQ(stats_of_reply(json{{"samples_ms", {"x", 2.0}}}).samples, 1) << "non-numbers are ignored";
  EXPECT_FALSE(s.to_json().contains("host_call_ms")) << "a reply without it (the CPU, an old cache) states none";
  reply["host_call_ms"] = 0.031;
  EXPECT_DOUBLE_EQ(stats_of_reply(reply).to_json().at("host_call_ms").get<double>(), 0.031);
  reply["host_call_ms"] = -1;
  EXPECT_FALSE(stats_of_reply(reply).to_json().contains("host_call_ms")) << "the CPU's -1 is not a time";
}

TEST(TimingPhase, SummaryLine) {
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

}  // namespace
}  // namespace kbv
