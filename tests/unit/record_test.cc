// The typed record (src/record): JSON -> Record -> JSON is exact on every record fixture and on
// older or odd records; the verdict rules (record/decide.h) map failures and findings as
// docs/RECORD.md says.
#include "record/decide.h"
#include "record/record.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace kbv {
namespace record_test {

using nlohmann::json;

json read_json(const std::string& relative) {
  std::ifstream in(std::string(KBV_SOURCE_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

void expect_round_trip(const json& j) {
  RecordRead r = record_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error;
  json back = to_json(r.record);
  EXPECT_EQ(back, j) << "in:  " << j.dump() << "\nout: " << back.dump();
  EXPECT_EQ(back.dump(), j.dump());
}

TEST(Record, RoundTripOfEveryReportFixtureRecord) {
  json records = read_json("tests/data/report/kbv_records.json");
  ASSERT_TRUE(records.is_array());
  ASSERT_GT(records.size(), 10u);
  for (const auto& r : records) expect_round_trip(r);
}

TEST(Record, FixtureFieldsAreTyped) {
  json records = read_json("tests/data/report/kbv_records.json");
  RecordRead r = record_from_json(records.at(0));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.record.level, records[0]["level"].get<int>());
  EXPECT_EQ(r.record.problem_id, records[0]["problem_id"].get<int>());
  EXPECT_EQ(verdict_name(r.record.verdict), records[0]["verdict"].get<std::string>());
  EXPECT_EQ(r.record.distributions.size(), records[0]["distributions"].size());
  EXPECT_TRUE(r.record.unknown.extra.empty()) << r.record.unknown.extra.dump();
}

// A record as kbv eval writes it, with every optional part.
json full_record() {
  return json{
      {"level", 1}, {"problem_id", 19}, {"sample_id", 0}, {"problem", "problems/level1/19_ReLU.py"},
      {"solution", "s.py"}, {"solution_hash", "ab"}, {"source_origin", "file"}, {"precision", "fp32"},
      {"compiled", true}, {"correctness", false}, {"verdict", "rejected"}, {"message", "m"},
      {"findings", json::array({{{"rule", "input_mutation"}, {"severity", "reject"}, {"message", "changed"},
                                 {"evidence", "trial 0 D1"}, {"cheat", "T8"}},
                                {{"rule", "memory_leak"}, {"severity", "warn"}, {"message", "grows"},
                                 {"evidence", "growth_bytes_per_call = 5"}, {"cheat", nullptr}}})},
      {"distributions", json::array({{{"trial", 0}, {"distribution", "D1"}, {"scale", 1.0}, {"seed", 12345678901234ULL},
                                      {"passed", false}, {"reason", "mismatch"},
                                      {"comparisons", json::array({{{"numel", 4}, {"mismatches", 1}}})},
                                      {"mutated_inputs", json::array({0})}}})},
      {"metadata", {{"hardware", "cpu"}, {"device", "cpu"}, {"correctness_trials", "(0 / 1)"},
                    {"correctness_issue", "m"}, {"needs_cuda", true}}},
      {"runtime", 1.25},
      {"runtime_stats", {{"mean", 1.3}, {"median", 1.25}, {"num_trials", 10}}},
      {"timing", {{"method", "cpu-clock"}, {"candidate", {{"median_ms", 1.25}, {"samples", 10}, {"rse", 0.01},
                                                         {"iqr_ms", 0.1}}},
                  {"baselines", {{"tf32", {{"median_ms", 2.5}}}}}, {"speedup", {{"tf32", 2.0}}},
                  {"speed_of_light", 0.5}, {"wall_check", {{"ok", true}}}}},
      {"memory", {{"measured", true}, {"method", "rss"}, {"candidate", {{"peak_bytes", 100}, {"calls", 3}}},
                  {"ratio", {{"tf32", 1.5}}}, {"baselines", {{"tf32", {{"peak_bytes", 150}}}}}}},
      {"compute", {{"method", "cpu-sampling"}, {"own_share", 0.9}}},
      {"audit", {{"threads", json::array()}, {"calls", 3}}},
      {"sandbox", {{"mode", "strict"}, {"layers", {{"seccomp", "applied"}, {"landlock", "unavailable: kernel 5.10"}}}}},
      {"build", {{"seconds", 0.5}, {"cached", true}, {"diagnostics", json::array()}}},
      {"traceback", "Traceback ..."},
      {"problem_overrides", {{"N", 4}}},
      {"reference_error", json::array({{{"output", 0}}})},
      {"seconds", 3.5},
      {"phase_seconds", {{"lint", 0.1}, {"build", 0.5}}},
      {"warm_worker", true},
      {"protocol", {{"name", "kbv"}, {"trials", 5}, {"distributions", json::array({{{"name", "D1"}, {"scale", 1.0}}})},
                    {"atol", 0.001}, {"timing", {{"enabled", true}}}, {"precision", "fp32"},
                    {"torch_version", "2.11"}, {"python_version", "3.11"}, {"device_name", "cpu"},
                    {"kbv_version", "0.1"}}}};
}

TEST(Record, RoundTripOfAFullRecord) {
  json j = full_record();
  expect_round_trip(j);
  Record r = record_from_json(j).record;
  EXPECT_EQ(r.verdict, Verdict::rejected);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].cheat, "T8");
  EXPECT_EQ(r.findings[1].cheat, "");
  EXPECT_EQ(r.distributions[0].seed, 12345678901234ULL);
  EXPECT_EQ(r.distributions[0].passed, false);
  EXPECT_EQ(r.metadata.needs_cuda, true);
  ASSERT_TRUE(r.timing && r.timing->speedup);
  EXPECT_DOUBLE_EQ(r.timing->speedup->at("tf32"), 2.0);
  EXPECT_EQ(r.timing->candidate->samples, 10);
  ASSERT_TRUE(r.memory && r.memory->candidate);
  EXPECT_EQ(r.memory->candidate->peak_bytes, 100.0);
  EXPECT_EQ(r.protocol.name, "kbv");
  EXPECT_EQ(r.protocol.distributions->at(0).name, "D1");
  EXPECT_EQ(r.precision_or_default(), "fp32");
  ASSERT_TRUE(r.sandbox);
  EXPECT_EQ((*r.sandbox)["layers"]["landlock"], "unavailable: kernel 5.10");
  EXPECT_TRUE(r.unknown.extra.find("sandbox") == r.unknown.extra.end()) << "sandbox is a field, not an unknown key";
  EXPECT_EQ(r.warm_worker, std::optional<bool>(true));
  EXPECT_TRUE(r.unknown.extra.find("warm_worker") == r.unknown.extra.end()) << "warm_worker is a field";
}

TEST(Record, UnknownKeysSurviveAModification) {
  json j = full_record();
  j["future_key"] = {{"x", 1}};
  j["metadata"]["upstream_key"] = "kept";
  j["findings"][0]["extra"] = 7;
  j["distributions"][0]["new"] = true;
  j["timing"]["candidate"]["host_other_cores"] = 0.5;
  Record r = record_from_json(j).record;
  r.message = "changed";
  json back = to_json(r);
  EXPECT_EQ(back["future_key"], j["future_key"]);
  EXPECT_EQ(back["metadata"]["upstream_key"], "kept");
  EXPECT_EQ(back["findings"][0]["extra"], 7);
  EXPECT_EQ(back["distributions"][0]["new"], true);
  EXPECT_EQ(back["timing"]["candidate"]["host_other_cores"], 0.5);
  EXPECT_EQ(back["message"], "changed");
}

TEST(Record, OlderAndOddRecordsRoundTrip) {
  // No verdict, no precision, no findings (written before they existed).
  expect_round_trip(json{{"level", 1}, {"problem_id", 2}, {"sample_id", 0}, {"compiled", true}, {"correctness", true}});
  // Keys of an unexpected type are kept verbatim, and the typed field keeps its default.
  json odd = {{"level", "one"}, {"problem_id", 2}, {"verdict", "someday"}, {"runtime", "fast"},
              {"findings", json::array({"not an object"})}, {"metadata", "none"}, {"timing", 3},
              {"protocol", {{"name", 5}, {"distributions", json::array({"D1"})}}}};
  expect_round_trip(odd);
  Record r = record_from_json(odd).record;
  EXPECT_EQ(r.level, 0);
  EXPECT_EQ(r.verdict, Verdict::pending);
  EXPECT_DOUBLE_EQ(r.runtime, -1.0);
  EXPECT_FALSE(r.protocol.name);
  EXPECT_FALSE(r.timing);
  // A finding without a cheat key, an imported record.
  expect_round_trip(json{{"findings", json::array({{{"rule", "r"}, {"severity", "warn"}}})}});
  expect_round_trip(json{{"level", 1}, {"kernelbench", {{"format", "kernelbench-verified"}, {"key", "1_0"},
                                                         {"standard_correctness", true}, {"hidden_failed", {"D2"}},
                                                         {"peak_memory", 1024.0}}}});
  EXPECT_FALSE(record_from_json(json::array()).ok());
  EXPECT_NE(record_from_json(json("x")).error.find("JSON object"), std::string::npos);
}

TEST(Record, VerdictWireNames) {
  for (const char* name : {"correct", "wrong_output", "compile_error", "runtime_error", "timeout", "crashed",
                           "rejected", "problem_error", "interrupted"}) {
    auto v = parse_verdict(name);
    ASSERT_TRUE(v) << name;
    EXPECT_STREQ(verdict_name(*v), name);
  }
  EXPECT_FALSE(parse_verdict("passed"));
  EXPECT_STREQ(verdict_name(Verdict::pending), "");
}

TEST(Record, StaticFindingEvidenceIsItsLocation) {
  Finding f;
  f.rule = "kernel_not_called";
  f.severity = "reject";
  f.file = "s.py";
  f.line = 12;
  f.code = "return x";
  f.cheat = "T3";
  EXPECT_EQ(f.to_json(), (json{{"rule", "kernel_not_called"}, {"severity", "reject"}, {"message", ""},
                               {"evidence", "s.py:12: return x"}, {"cheat", "T3"}}));
  f.code.clear();
  EXPECT_EQ(f.evidence_text(), "s.py:12");
}

// ---- the verdict rules -------------------------------------------------------------------------

WorkerFailure failed(const std::string& kind, const std::string& message) {
  WorkerFailure f;
  f.status = WorkerFailure::Status::failed;
  f.kind = kind;
  f.message = message;
  return f;
}

WorkerFailure channel(WorkerFailure::Status s, const std::string& detail, bool interrupted = false) {
  WorkerFailure f;
  f.status = s;
  f.detail = detail;
  f.interrupted = interrupted;
  return f;
}

TEST(Decide, Classify) {
  EXPECT_EQ(classify(failed("", "boom"), "runtime_error").kind, "runtime_error");
  EXPECT_EQ(classify(failed("missing_model_new", "x"), "runtime_error").kind, "missing_model_new");
  EXPECT_EQ(classify(channel(WorkerFailure::Status::timeout, "120 s"), "x").kind, "timeout");
  EXPECT_EQ(classify(channel(WorkerFailure::Status::timeout, "120 s"), "x").message, "120 s");
  EXPECT_EQ(classify(channel(WorkerFailure::Status::died, "signal 9"), "x").kind, "crashed");
  EXPECT_EQ(classify(channel(WorkerFailure::Status::channel_error, "eof"), "x").kind, "crashed");
  EXPECT_EQ(classify(channel(WorkerFailure::Status::channel_error, "eof", true), "x").kind, "interrupted");
}

TEST(Decide, CandidateFailures) {
  Record r;
  WorkerFailure f = failed("import_error", "no module");
  f.traceback = "Traceback";
  fail_candidate(r, f, "trial 0 D1 (x1)");
  EXPECT_EQ(r.verdict, Verdict::runtime_error);
  EXPECT_EQ(r.message, "trial 0 D1 (x1): no module");
  EXPECT_EQ(r.metadata.runtime_error, r.message);
  EXPECT_EQ(r.traceback, "Traceback");
  EXPECT_FALSE(r.correctness);

  Record c;
  fail_candidate(c, failed("", "CUDA error: an illegal memory access was encountered"), "");
  EXPECT_EQ(c.verdict, Verdict::crashed);
  EXPECT_NE(c.message.find("the CUDA context is lost"), std::string::npos);
  EXPECT_EQ(c.metadata.runtime_error, c.message);

  Record t;
  fail_candidate(t, channel(WorkerFailure::Status::timeout, "no reply in 120 s"), "trial 1 D2 (x3)");
  EXPECT_EQ(t.verdict, Verdict::timeout);
  EXPECT_FALSE(t.metadata.runtime_error);

  Record p;
  fail_candidate(p, failed("rejected", "a plain tensor subclass"), "");
  EXPECT_EQ(p.verdict, Verdict::rejected);
  ASSERT_EQ(p.findings.size(), 1u);
  EXPECT_EQ(p.findings[0].rule, "plain_output");
  EXPECT_EQ(p.findings[0].cheat, "T3");
}

TEST(Decide, TimingFailures) {
  Record r;
  r.verdict = Verdict::correct;
  r.correctness = true;
  fail_timing(r, channel(WorkerFailure::Status::died, "signal 11"), "while timing the candidate: signal 11");
  EXPECT_EQ(r.verdict, Verdict::crashed);
  EXPECT_FALSE(r.correctness);
  EXPECT_EQ(r.metadata.runtime_error, "while timing the candidate: signal 11");
  Record k;
  fail_timing(k, failed("", "x"), "while timing the candidate: misaligned address");
  EXPECT_EQ(k.verdict, Verdict::crashed);
  Record e;
  fail_timing(e, channel(WorkerFailure::Status::channel_error, "eof"), "m");
  EXPECT_EQ(e.verdict, Verdict::runtime_error);
}

TEST(Decide, BuildAndProblem) {
  Record b;
  fail_build(b, "needs_cuda", "needs a GPU");
  EXPECT_EQ(b.verdict, Verdict::compile_error);
  EXPECT_EQ(b.metadata.compilation_error, "needs a GPU");
  EXPECT_EQ(b.metadata.needs_cuda, true);
  Record t;
  fail_build(t, "timeout", "900 s");
  EXPECT_EQ(t.verdict, Verdict::timeout);
  Record i;
  fail_build(i, "interrupted", "stop");
  EXPECT_EQ(i.verdict, Verdict::interrupted);
  EXPECT_FALSE(i.metadata.compilation_error);
  Record p;
  fail_problem(p, false, "p.py: no Model");
  EXPECT_EQ(p.verdict, Verdict::problem_error);
  EXPECT_EQ(p.metadata.problem_error, "p.py: no Model");
}

TEST(Decide, ChecksAndFindings) {
  Record ok;
  decide_checks(ok, 20, 20, "");
  EXPECT_EQ(ok.verdict, Verdict::correct);
  EXPECT_TRUE(ok.correctness);
  EXPECT_EQ(ok.message, "passed 20 of 20 checks");

  Record wrong;
  decide_checks(wrong, 19, 20, "trial 2 D3 (x0.01): mismatch");
  EXPECT_EQ(wrong.verdict, Verdict::wrong_output);
  EXPECT_EQ(wrong.metadata.correctness_issue, "trial 2 D3 (x0.01): mismatch");

  Record none;
  decide_checks(none, 0, 0, "");
  EXPECT_EQ(none.verdict, Verdict::wrong_output);

  Record rej;
  rej.findings.push_back(make_finding("memory_leak", "warn", "grows", "e", ""));
  EXPECT_FALSE(has_reject(rej));
  rej.findings.push_back(make_finding("input_mutation", "reject", "changed input 0", "trial 0 D1", "T8"));
  rej.findings.push_back(make_finding("stale_output", "reject", "second", "e", "T5"));
  EXPECT_TRUE(has_reject(rej));
  decide_checks(rej, 20, 20, "");
  EXPECT_EQ(rej.verdict, Verdict::rejected);
  EXPECT_EQ(rej.message, "changed input 0");
  EXPECT_EQ(rej.metadata.correctness_issue, "changed input 0");
  EXPECT_FALSE(rej.correctness);
}

// Instability told apart from failure: the first failed check's identical re-runs decide between
// flaky (one passed) and wrong_output (all failed); rejection still comes first.
FlakyAttempt attempt(int trial, const char* dist, double scale, int n, const char* reason) {
  FlakyAttempt a;
  a.trial = trial;
  a.distribution = dist;
  a.scale = scale;
  a.attempt = n;
  if (reason) a.reason = json(reason);
  return a;
}

TEST(Decide, FlakyWhenAnIdenticalReRunPasses) {
  Record r;
  r.flaky.emplace();
  r.flaky->reruns = 2;
  r.flaky->failed = {attempt(2, "D3", 0.01, 0, "output 0: 5 of 10 elements differ"),
                     attempt(2, "D3", 0.01, 1, "output 0: 3 of 10 elements differ")};
  r.flaky->passed = {attempt(2, "D3", 0.01, 2, nullptr)};
  decide_checks(r, 19, 20, "trial 2 D3 (x0.01): output 0: 5 of 10 elements differ");
  EXPECT_EQ(r.verdict, Verdict::flaky);
  EXPECT_FALSE(r.correctness);
  EXPECT_EQ(r.message,
            "trial 2 D3 (x0.01) failed, then passed on identical re-run 2 of at most 2 (same seed, same inputs); "
            "re-run 1 failed again: unstable, not wrong on every run; the failure: output 0: 5 of 10 elements differ");
  EXPECT_EQ(r.metadata.correctness_issue, r.message);

  Record once;  // the first re-run passed
  once.flaky.emplace();
  once.flaky->reruns = 2;
  once.flaky->failed = {attempt(0, "D1", 1.0, 0, "mismatch")};
  once.flaky->passed = {attempt(0, "D1", 1.0, 1, nullptr)};
  decide_checks(once, 3, 4, "trial 0 D1 (x1): mismatch");
  EXPECT_EQ(once.verdict, Verdict::flaky);
  EXPECT_EQ(once.message,
            "trial 0 D1 (x1) failed, then passed on identical re-run 1 of at most 2 (same seed, same inputs): "
            "unstable, not wrong on every run; the failure: mismatch");
}

TEST(Decide, WrongOutputWhenEveryReRunFails) {
  // Wrong only on D4 (the hidden distribution's catch), every time: not instability.
  Record r;
  r.flaky.emplace();
  r.flaky->reruns = 2;
  r.flaky->failed = {attempt(0, "D4", -1.0, 0, "m"), attempt(0, "D4", -1.0, 1, "m"), attempt(0, "D4", -1.0, 2, "m")};
  decide_checks(r, 15, 20, "trial 0 D4 (x-1): m");
  EXPECT_EQ(r.verdict, Verdict::wrong_output);
  EXPECT_EQ(r.message, "trial 0 D4 (x-1): m (failed again on 2 identical re-runs: same seed, same inputs)");
  EXPECT_EQ(r.metadata.correctness_issue, r.message);

  Record one;
  one.flaky.emplace();
  one.flaky->reruns = 1;
  one.flaky->failed = {attempt(0, "D1", 1.0, 0, "m"), attempt(0, "D1", 1.0, 1, "m")};
  decide_checks(one, 0, 4, "trial 0 D1 (x1): m");
  EXPECT_EQ(one.message, "trial 0 D1 (x1): m (failed again on 1 identical re-run: same seed, same inputs)");

  Record off;  // re-runs off (--protocol kernelbench): as before
  decide_checks(off, 4, 5, "trial 1 D1 (x1): m");
  EXPECT_EQ(off.verdict, Verdict::wrong_output);
  EXPECT_EQ(off.message, "trial 1 D1 (x1): m");

  Record rej;  // a rejecting finding decides before instability
  rej.flaky = r.flaky;
  rej.flaky->passed = {attempt(0, "D4", -1.0, 1, nullptr)};
  rej.findings.push_back(make_finding("input_mutation", "reject", "changed input 0", "trial 0 D4", "T8"));
  decide_checks(rej, 19, 20, "trial 0 D4 (x-1): m");
  EXPECT_EQ(rej.verdict, Verdict::rejected);
}

TEST(Record, FlakyPartRoundTrips) {
  json j = {{"verdict", "flaky"},
            {"flaky",
             {{"reruns", 2},
              {"passed", {{{"trial", 1}, {"distribution", "D2"}, {"scale", 3.0}, {"attempt", 1}}}},
              {"failed", {{{"trial", 1}, {"distribution", "D2"}, {"scale", 3.0}, {"attempt", 0}, {"reason", "m"}}}},
              {"future_key", true}}}};
  RecordRead r = record_from_json(j);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.record.verdict, Verdict::flaky);
  ASSERT_TRUE(r.record.flaky);
  EXPECT_EQ(r.record.flaky->reruns, 2);
  ASSERT_EQ(r.record.flaky->passed.size(), 1u);
  EXPECT_EQ(r.record.flaky->passed[0].attempt, 1);
  EXPECT_EQ(r.record.flaky->passed[0].distribution, "D2");
  ASSERT_EQ(r.record.flaky->failed.size(), 1u);
  EXPECT_EQ(r.record.flaky->failed[0].reason, json("m"));
  EXPECT_FALSE(r.record.flaky->passed[0].reason);
  json back = to_json(r.record);
  EXPECT_EQ(back["flaky"], j["flaky"]);
  EXPECT_EQ(back["verdict"], "flaky");
  // A record without re-runs has no flaky key.
  EXPECT_FALSE(to_json(record_from_json(json{{"verdict", "wrong_output"}}).record).contains("flaky"));
}

// speedup_ci95 is typed, and decides what a speedup says: only an interval that excludes 1 is a
// win or a loss.
TEST(Record, SpeedupIntervalDecidesWinLossOrNoDifference) {
  json j = {{"verdict", "correct"},
            {"timing",
             {{"speedup", {{"tf32", 1.4}, {"fp32", 1.02}, {"compile", 0.5}}},
              {"speedup_ci95", {{"tf32", {1.2, 1.6}}, {"fp32", {0.97, 1.08}}, {"compile", {0.45, 0.55}}}},
              {"pairs", 8},
              {"threads", 1}}}};
  RecordRead r = record_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.record.timing && r.record.timing->speedup_ci95);
  const Timing& t = *r.record.timing;
  EXPECT_EQ(t.pairs, 8);
  EXPECT_EQ(t.threads, 1);
  EXPECT_EQ(speedup_call(t, "tf32"), SpeedupCall::faster);
  EXPECT_EQ(speedup_call(t, "fp32"), SpeedupCall::no_difference);
  EXPECT_EQ(speedup_call(t, "compile"), SpeedupCall::slower);
  EXPECT_EQ(speedup_call(t, "missing"), SpeedupCall::unknown);
  EXPECT_STREQ(speedup_call_name(SpeedupCall::no_difference), "no measurable difference");
  EXPECT_EQ(to_json(r.record)["timing"]["speedup_ci95"], j["timing"]["speedup_ci95"]);
  // An interval of the wrong shape stays untyped, kept verbatim; the point estimate decides.
  json odd = j;
  odd["timing"]["speedup_ci95"] = {{"tf32", {1.2}}};
  RecordRead o = record_from_json(odd);
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o.record.timing->speedup_ci95);
  EXPECT_EQ(speedup_call(*o.record.timing, "fp32"), SpeedupCall::faster);
  EXPECT_EQ(to_json(o.record)["timing"]["speedup_ci95"], odd["timing"]["speedup_ci95"]);
  EXPECT_EQ(parse_verdict("flaky"), Verdict::flaky);
}

}  // namespace record_test
}  // namespace kbv
