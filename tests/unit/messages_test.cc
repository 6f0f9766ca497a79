// The typed supervisor <-> worker messages (src/proto/messages.h): every op's request and reply
// round-trips, absent fields keep the defaults, and malformed messages give an error message.
#include "proto/messages.h"

#include <gtest/gtest.h>

#include <set>

using nlohmann::json;
using namespace kbv::msg;

namespace messages_test {

// to_json, then from_json into a fresh struct, then to_json again: the same wire object.
template <class T> json round_trip(const T& m) {
  json j = to_json(m);
  T back{};
  std::string e = from_json(j, back);
  EXPECT_EQ(e, "") << j.dump();
  json again = to_json(back);
  EXPECT_EQ(j, again);
  return j;
}

// A message with the required fields only: the parse succeeds and returns the struct.
template <class T> T parse(const json& j) {
  T m{};
  std::string e = from_json(j, m);
  EXPECT_EQ(e, "") << j.dump();
  return m;
}

template <class T> std::string error_of(const json& j) {
  T m{};
  return from_json(j, m);
}

TEST(Messages, OpNamesRoundTripAndAreDistinct) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(Op::draw); ++i) {
    Op op = static_cast<Op>(i);
    std::string name = op_name(op);
    EXPECT_TRUE(names.insert(name).second) << name;
    ASSERT_TRUE(op_from_name(name).has_value());
    EXPECT_EQ(*op_from_name(name), op);
  }
  EXPECT_EQ(names.size(), 21u);  // ping added for warm workers
  EXPECT_FALSE(op_from_name("frobnicate").has_value());
  EXPECT_EQ(op_of(json{{"op", "time_draw"}}), Op::time_draw);
  EXPECT_FALSE(op_of(json{{"op", 3}}).has_value());
  EXPECT_FALSE(op_of(json::array()).has_value());
  EXPECT_EQ(op_text(json{{"op", 3}}), "3");
  EXPECT_EQ(op_text(json{{"ok", true}}), "");
}

TEST(Messages, RequestsCarryTheirOpAndRepliesOk) {
  EXPECT_EQ(to_json(HelloRequest{}), (json{{"op", "hello"}}));
  EXPECT_EQ(to_json(ExitRequest{}), (json{{"op", "exit"}}));
  EXPECT_EQ(to_json(PingRequest{}), (json{{"op", "ping"}}));
  EXPECT_EQ(to_json(ReleaseRequest{}), (json{{"op", "release"}}));
  EXPECT_EQ(to_json(TimeReleaseRequest{}), (json{{"op", "time_release"}}));
  EXPECT_EQ(to_json(Done{}), (json{{"ok", true}}));
  EXPECT_EQ(to_json(DrawAsk{7, ""}), (json{{"op", "draw"}, {"index", 7}}));  // no mark: none on the wire
  EXPECT_EQ(to_json(TimeReferenceRequest{})["op"], "time");
  EXPECT_EQ(to_json(TimeCandidateRequest{})["op"], "time");
  EXPECT_TRUE(reply_ok(to_json(BuildReply{})));
  EXPECT_FALSE(reply_ok(to_json(Failure{"rejected", "no", ""})));
  EXPECT_FALSE(reply_ok(json{{"ok", "yes"}}));
}

TEST(Messages, Failure) {
  json j = round_trip(Failure{"runtime_error", "boom", "Traceback ..."});
  EXPECT_EQ(j, (json{{"ok", false}, {"kind", "runtime_error"}, {"message", "boom"}, {"traceback", "Traceback ..."}}));
  // No traceback: no key.
  EXPECT_FALSE(to_json(Failure{"rejected", "no", ""}).contains("traceback"));
  Failure f = failure_of(json{{"ok", false}, {"kind", "compile_error"}, {"message", "x"}});
  EXPECT_EQ(f.kind, "compile_error");
  EXPECT_EQ(f.message, "x");
  // A malformed failure still gives a kind and a message that says what came.
  Failure g = failure_of(json{{"ok", false}});
  EXPECT_EQ(g.kind, "protocol_error");
  EXPECT_NE(g.message.find("malformed"), std::string::npos);
  Failure h = failure_of(json{{"ok", false}, {"kind", "problem_error"}});
  EXPECT_EQ(h.kind, "problem_error");
  EXPECT_NE(h.message.find("message"), std::string::npos);
}

TEST(Messages, Hello) {
  round_trip(HelloRequest{});
  HelloReply r;
  r.pid = 12;
  r.role = "reference";
  r.torch_version = "2.11.0";
  r.python_version = "3.11.2";
  json j = round_trip(r);
  EXPECT_FALSE(j.contains("device_count"));  // only with CUDA
  r.cuda_available = true;
  r.device_count = 2;
  EXPECT_EQ(round_trip(r)["device_count"], 2);
  HelloReply d = parse<HelloReply>(json{{"ok", true}});
  EXPECT_EQ(d.device_name, "cpu");
  EXPECT_FALSE(d.cuda_built);
  EXPECT_NE(error_of<HelloReply>(json{{"ok", true}, {"pid", "twelve"}}).find("'pid'"), std::string::npos);
}

TEST(Messages, Load) {
  LoadRequest r;
  r.path = "p.py";
  r.code = "class Model: ...";
  json j = round_trip(r);
  EXPECT_FALSE(j.contains("init_inputs"));
  r.init_inputs = json::array({{{"kind", "value"}, {"value", 3}}});
  round_trip(r);
  LoadRequest d = parse<LoadRequest>(json{{"op", "load"}, {"path", "a"}, {"code", "b"}});
  EXPECT_EQ(d.device, "cpu");
  EXPECT_EQ(d.precision, "fp32");
  EXPECT_EQ(d.seed, 42);
  EXPECT_FALSE(d.init_inputs.has_value());
  EXPECT_NE(error_of<LoadRequest>(json{{"op", "load"}, {"path", "a"}}).find("'code'"), std::string::npos);
  EXPECT_NE(error_of<LoadRequest>(json{{"op", "load"}, {"path", 1}, {"code", "b"}}).find("a string"), std::string::npos);

  LoadProblemReply p;
  p.overrides = {{"N", "4"}};
  round_trip(p);
  EXPECT_TRUE(parse<LoadProblemReply>(json{{"ok", true}}).init_inputs.is_array());
  LoadCandidateReply c;
  c.load_seconds = 1.5;
  EXPECT_EQ(round_trip(c)["load_seconds"], 1.5);
}

TEST(Messages, Describe) {
  EXPECT_EQ(parse<DescribeRequest>(json{{"op", "describe"}}).seed, 42);
  round_trip(DescribeRequest{7});
  DescribeReply r;
  r.inputs.push_back({"float32", std::vector<int64_t>{2, 3}, std::nullopt});
  r.inputs.push_back({std::nullopt, std::nullopt, "4"});
  json j = round_trip(r);
  EXPECT_EQ(j["inputs"][0], (json{{"dtype", "float32"}, {"sizes", {2, 3}}}));
  EXPECT_EQ(j["inputs"][1], (json{{"value", "4"}}));
  EXPECT_NE(error_of<DescribeReply>(json{{"inputs", {1}}}).find("item 0"), std::string::npos);
  EXPECT_NE(error_of<DescribeReply>(json{{"inputs", {{{"sizes", "x"}}}}}).find("'sizes'"), std::string::npos);
}

TEST(Messages, KernelbenchSeeds) {
  EXPECT_EQ(parse<KernelbenchSeedsRequest>(json{{"op", "kernelbench_seeds"}}).n, 5);
  round_trip(KernelbenchSeedsRequest{3});
  KernelbenchSeedsReply r;
  r.seeds = {1, 4294967294ULL};
  round_trip(r);
  EXPECT_NE(error_of<KernelbenchSeedsReply>(json{{"seeds", "no"}}).find("'seeds'"), std::string::npos);
}

TEST(Messages, InputsAndTolerance) {
  InputsRequest r;
  r.seed = 9;
  json j = round_trip(r);
  EXPECT_FALSE(j.contains("atol"));  // absent: the worker's fallback
  EXPECT_EQ(j["use_rel_l2"], true);
  r.tolerance.atol = 0.01;
  r.tolerance.rel_l2 = 0.02;
  j = round_trip(r);
  EXPECT_EQ(j["atol"], 0.01);
  EXPECT_EQ(j["rel_l2"], 0.02);
  InputsRequest d = parse<InputsRequest>(json{{"op", "inputs"}, {"seed", 1}});
  EXPECT_EQ(d.scale, 1.0);
  EXPECT_EQ(d.input_draw, "host");
  EXPECT_FALSE(d.tolerance.atol.has_value());
  EXPECT_TRUE(d.tolerance.use_rel_l2);
  EXPECT_NE(error_of<InputsRequest>(json{{"op", "inputs"}}).find("'seed'"), std::string::npos);
  EXPECT_NE(error_of<InputsRequest>(json{{"op", "inputs"}, {"seed", -1}}).find("non-negative"), std::string::npos);
  EXPECT_NE(error_of<InputsRequest>(json{{"op", "inputs"}, {"seed", 1}, {"atol", "x"}}).find("'atol'"),
            std::string::npos);

  InputsReply a;
  a.outputs = 2;
  a.reference_seconds = 0.5;
  EXPECT_FALSE(round_trip(a).contains("reference_error"));
  a.reference_error = json::array({{{"output", 0}}});
  round_trip(a);
}

TEST(Messages, Check) {
  CheckRequest r;
  r.outputs = json::array({{{"kind", "tensor"}}});
  round_trip(r);
  EXPECT_NE(error_of<CheckRequest>(json{{"op", "check"}}).find("'outputs'"), std::string::npos);
  CheckReply c;
  c.passed = false;
  c.reason = "mismatch";
  c.mutated_inputs = {0, 2};
  json j = round_trip(c);
  EXPECT_EQ(j["mutated_inputs"].dump(), "[0,2]");
  CheckReply d = parse<CheckReply>(json{{"ok", true}});
  EXPECT_FALSE(d.passed);
  EXPECT_TRUE(d.mutated_inputs.empty());
}

TEST(Messages, Lint) {
  LintRequest r;
  r.seeds = {1, 2};
  r.scale = 100;
  round_trip(r);
  EXPECT_NE(error_of<LintRequest>(json{{"op", "lint"}, {"scale", 1.0}}).find("'seeds'"), std::string::npos);
  LintReply l;
  l.dropout = {"drop (Dropout, p=0.5)"};
  l.outputs = json::array({{{"index", 0}, {"numel", 4}}});
  EXPECT_FALSE(round_trip(l).contains("allow_error"));
  l.allow_error = "KBV_LINT_ALLOW must be a dict";
  round_trip(l);
  EXPECT_EQ(parse<LintReply>(json{{"ok", true}}).precision, "fp32");
}

TEST(Messages, TimeInputs) {
  TimeInputsRequest r;
  r.seeds = {5};
  round_trip(r);
  EXPECT_EQ(parse<TimeInputsRequest>(json{{"op", "time_inputs"}, {"seeds", {1}}}).max_bytes, uint64_t{4} << 30);
  EXPECT_NE(error_of<TimeInputsRequest>(json{{"op", "time_inputs"}}).find("'seeds'"), std::string::npos);
  TimeInputsReply a;
  a.input_bytes = 10;
  round_trip(a);
}

TEST(Messages, Time) {
  TimeReferenceRequest r;
  r.timing.rule.warmup = 5;
  r.timing.launch_hold_us = 500;
  json j = round_trip(r);
  EXPECT_EQ(j["rule"]["warmup"], 5);
  EXPECT_FALSE(j.contains("fresh_seed"));
  EXPECT_FALSE(j["marks"].get<bool>());
  r.fresh_seed = 77;
  r.marks = true;
  EXPECT_TRUE(round_trip(r)["marks"].get<bool>());
  TimeReferenceRequest d = parse<TimeReferenceRequest>(json{{"op", "time"}, {"rule", {{"rse_target", 0.01}}}});
  EXPECT_EQ(d.mode, "tf32");
  EXPECT_EQ(d.timing.rule.rse_target, 0.01);
  EXPECT_EQ(d.timing.rule.warmup, kbv::StopRule{}.warmup);  // absent rule fields keep theirs
  EXPECT_EQ(d.timing.flush_bytes, 0u);
  EXPECT_NE(error_of<TimeReferenceRequest>(json{{"op", "time"}, {"rule", {{"warmup", "x"}}}}).find("in 'rule'"),
            std::string::npos);
  EXPECT_NE(error_of<TimeReferenceRequest>(json{{"op", "time"}, {"rule", 3}}).find("an object"), std::string::npos);

  TimeCandidateRequest c;
  c.sets = json::array({json::array()});
  c.fresh = true;
  c.marks = true;
  round_trip(c);
  TimeCandidateRequest cd = parse<TimeCandidateRequest>(json{{"op", "time"}, {"sets", json::array()}});
  EXPECT_EQ(cd.spot_per_output, 2);
  EXPECT_EQ(cd.spot_max_calls, 0);  // every timed call (docs/TIMING.md, spot checks)
  EXPECT_FALSE(cd.marks);
  EXPECT_FALSE(cd.fresh);
  EXPECT_NE(error_of<TimeCandidateRequest>(json{{"op", "time"}}).find("'sets'"), std::string::npos);

  TimeReply t;
  t.method = "steady-clock";
  t.samples_ms = {0.1, 0.2};
  t.stop = "rse";
  t.sets = 3;
  json tj = round_trip(t);
  EXPECT_FALSE(tj.contains("inputs"));
  EXPECT_FALSE(tj.contains("spot"));
  EXPECT_EQ(tj["host_call_ms"], -1);
  t.spot = json::array({{{"sample", 0}}});
  t.mode = "fp32";
  round_trip(t);
  EXPECT_EQ(parse<TimeReply>(json{{"ok", true}}).host_call_ms, -1);
}

TEST(Messages, TimeDrawAndDrawAsk) {
  round_trip(TimeDrawRequest{3, 4});
  EXPECT_NE(error_of<TimeDrawRequest>(json{{"op", "time_draw"}, {"index", 1}}).find("'fresh_seed'"), std::string::npos);
  round_trip(DrawAsk{2, ""});
  round_trip(DrawAsk{3, "end"});
  EXPECT_NE(error_of<DrawAsk>(json{{"op", "draw"}}).find("'index'"), std::string::npos);
  EXPECT_NE(error_of<DrawAsk>(json{{"op", "draw"}, {"index", "1"}}).find("an integer"), std::string::npos);
  round_trip(Done{});
}

TEST(Messages, SpotCheck) {
  SpotCheckRequest r;
  r.entries = json::array({{{"set", 0}}});
  round_trip(r);
  SpotCheckRequest d = parse<SpotCheckRequest>(json{{"op", "spot_check"}, {"entries", json::array()}});
  EXPECT_EQ(d.atol, 1e-3);
  EXPECT_EQ(d.rtol, 1e-3);
  EXPECT_FALSE(d.fresh_seed.has_value());
  EXPECT_NE(error_of<SpotCheckRequest>(json{{"op", "spot_check"}}).find("'entries'"), std::string::npos);
  SpotCheckReply s{3, 1, "wrong", 12};
  round_trip(s);
}

TEST(Messages, Calibrate) {
  json j = round_trip(CalibrateRequest{});
  EXPECT_FALSE(j.contains("matmul_n"));
  round_trip(CalibrateRequest{256});
  CalibrateReply c;
  c.bandwidth_bytes_per_s = 1e9;
  c.method = "memcpy";
  c.matmul_n = 512;
  round_trip(c);
}

TEST(Messages, Measure) {
  MeasureRequest cand;
  cand.args = json::array();
  json j = round_trip(cand);
  EXPECT_FALSE(j.contains("seed"));
  MeasureRequest ref;
  ref.seed = 5;
  ref.baseline = "tf32";
  round_trip(ref);
  MeasureRequest d = parse<MeasureRequest>(json{{"op", "measure"}});
  EXPECT_EQ(d.repeats, 3);
  EXPECT_EQ(d.baseline, "fp32");
  EXPECT_EQ(d.input_draw, "host");
  MeasureReply m;
  m.memory = {{"measured", false}};
  EXPECT_FALSE(round_trip(m).contains("compute"));
  m.compute = json{{"method", "cupti"}};
  round_trip(m);
}

TEST(Messages, Run) {
  round_trip(RunRequest{json::array({{{"kind", "value"}, {"value", 1}}})});
  EXPECT_NE(error_of<RunRequest>(json{{"op", "run"}}).find("'args'"), std::string::npos);
  RunReply r;
  r.seconds = 0.25;
  round_trip(r);
}

TEST(Messages, Audit) {
  AuditRequest r;
  r.phase = "first";
  r.args = json::array();
  round_trip(r);
  EXPECT_EQ(parse<AuditRequest>(json{{"op", "audit"}, {"args", json::array()}}).phase, "");
  EXPECT_NE(error_of<AuditRequest>(json{{"op", "audit"}, {"phase", "first"}}).find("'args'"), std::string::npos);
  // The observations sit at the top level beside "ok" and "outputs".
  AuditReply a;
  a.observed = {{"threads", json::array()}, {"stale_skipped", "why"}};
  a.outputs = nullptr;
  json j = round_trip(a);
  EXPECT_EQ(j["threads"], json::array());
  EXPECT_TRUE(j["outputs"].is_null());
  AuditReply back = parse<AuditReply>(j);
  EXPECT_FALSE(back.observed.contains("ok"));
  EXPECT_FALSE(back.observed.contains("outputs"));
  EXPECT_EQ(back.observed["stale_skipped"], "why");
  AuditReply first = parse<AuditReply>(json{{"ok", true}, {"aliases", json::array()}});
  EXPECT_FALSE(first.outputs.has_value());
}

TEST(Messages, Build) {
  BuildRequest r;
  r.path = "s.py";
  r.code = "x";
  round_trip(r);
  EXPECT_EQ(parse<BuildRequest>(json{{"op", "build"}, {"path", "a"}, {"code", "b"}}).device, "cpu");
  EXPECT_NE(error_of<BuildRequest>(json{{"op", "build"}, {"code", "b"}}).find("'path'"), std::string::npos);
  BuildReply b;
  b.seconds = 2;
  round_trip(b);
}

TEST(Messages, MalformedMessagesGiveErrorsNotExceptions) {
  for (const json& bad : {json(), json(3), json("text"), json::array({1, 2})}) {
    EXPECT_NE(error_of<LoadRequest>(bad), "");
    EXPECT_NE(error_of<HelloRequest>(bad), "");
    EXPECT_NE(error_of<TimeReply>(bad), "");
  }
  EXPECT_NE(error_of<TimeCandidateRequest>(json{{"op", "time"}, {"sets", json::array()}, {"spot_seed", 1.5}}), "");
  EXPECT_NE(error_of<CheckRequest>(json{{"op", "check"}, {"outputs", {}}, {"use_rel_l2", "yes"}}), "");
}

}  // namespace messages_test
