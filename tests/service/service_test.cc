// The evaluation API apart from HTTP (src/service): options checked as kbv eval's flags, every bad
// request answered with a 4xx that changes nothing, and the Prometheus text.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "service/api.h"
#include "service/metrics.h"
#include "service/options.h"
#include "service/server.h"
#include "supervisor/precision.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kbv::service {
namespace service_test {
using nlohmann::json;
namespace fs = std::filesystem;

// An in-memory queue: submits and lookups only (what the API calls).
class MemoryQueue final : public queue::Queue {
 public:
  std::map<std::string, queue::Job> jobs;
  int submits = 0;
  bool broken = false;
  std::optional<std::string> submit(const queue::JobSpec& spec, std::string& error) override {
    if (broken) {
      error = "database is locked";
      return std::nullopt;
    }
    ++submits;
    std::string key = sha256_hex(spec.problem_source + "\n" + spec.solution_source + "\n" + spec.options.dump());
    for (auto& [id, job] : jobs)
      if (job.state == queue::State::done && job.record.value("key", "") == key) return id;
    queue::Job job;
    job.id = "j" + std::to_string(jobs.size() + 1);
    job.state = queue::State::queued;
    job.spec = spec;
    job.record = {{"key", key}};
    jobs[job.id] = job;
    return job.id;
  }
  std::optional<queue::Job> get(const std::string& id, std::string& error) override {
    if (broken) {
      error = "database is locked";
      return std::nullopt;
    }
    auto it = jobs.find(id);
    if (it == jobs.end()) return std::nullopt;
    return it->second;
  }
  std::optional<queue::Lease> lease(const std::string&, double, std::string&) override { return std::nullopt; }
  std::optional<queue::Job> job_of(const queue::Lease&, std::string&) override { return std::nullopt; }
  bool heartbeat(const queue::Lease&, double, std::string&) override { return false; }
  bool complete(const queue::Lease&, const json&, std::string&) override { return false; }
  bool fail(const queue::Lease&, const std::string&, bool, std::string&) override { return false; }
  std::optional<queue::Counts> counts(std::string& error) override {
    if (broken) {
      error = "database is locked";
      return std::nullopt;
    }
    queue::Counts c;
    for (const auto& [id, job] : jobs) ++(job.state == queue::State::queued ? c.queued : c.done);
    return c;
  }
  bool put_blob(const std::string&, const std::string&, std::string&) override { return false; }
  std::optional<std::string> get_blob(const std::string&, std::string&) override { return std::nullopt; }
  std::string url() const override { return "memory:"; }
};

OptionLimits cpu_limits() {
  OptionLimits l;
  l.device = "cpu";
  return l;
}

TEST(ServiceOptions, DefaultsAreFilledSoThatTheSameEvaluationHasOneKey) {
  CheckedOptions empty = check_options(json::object(), cpu_limits());
  CheckedOptions spelled = check_options(
      {{"device", "cpu"}, {"protocol", "kbv"}, {"policy", "strict"}, {"precision", "fp32"}, {"timing", "on"}},
      cpu_limits());
  ASSERT_TRUE(empty.ok()) << empty.error;
  ASSERT_TRUE(spelled.ok()) << spelled.error;
  EXPECT_EQ(empty.canonical, spelled.canonical);
  EXPECT_EQ(check_options(json(), cpu_limits()).canonical, empty.canonical);  // null is {}
}

TEST(ServiceOptions, BadValuesAreErrorsNamingTheKeyAndWhatWasGiven) {
  auto error = [](json o) { return check_options(o, cpu_limits()).error; };
  EXPECT_EQ(error({{"trials", 0}}), "options.trials: must be greater than 0, got 0");
  EXPECT_EQ(error({{"trials", 2.5}}), "options.trials: expected a whole number, got 2.5");
  EXPECT_EQ(error({{"trials", "5"}}), "options.trials: expected a whole number, got \"5\"");
  EXPECT_EQ(error({{"trials", 101}}), "options.trials: must be at most 100, got 101");
  EXPECT_EQ(error({{"device", "tpu"}}), "options.device: must be one of cuda, cpu, got 'tpu'");
  EXPECT_EQ(error({{"precision", 16}}), "options.precision: expected a string (fp32, bf16, fp16), got 16");
  EXPECT_EQ(error({{"tolerance", -1}}), "options.tolerance: must be greater than 0, got -1");
  EXPECT_EQ(error({{"seed", -3}}), "options.seed: expected a whole number at least 0, got -3");
  EXPECT_EQ(error({{"launch_hold_us", 1e9}}), "options.launch_hold_us: must be in [0, 10000], got 1000000000.0");
  EXPECT_EQ(error({{"baselines", "tf32,int8"}}), "options.baselines: must be one of tf32, fp32, compile, got 'int8'");
  EXPECT_EQ(error({{"timeout_call", 1e6}}), "options.timeout_call: must be at most 120 (this server's limit), got 1000000.0");
  EXPECT_NE(error({{"sandbox", "off"}}).find("options.sandbox: unknown option; the options are: device,"), std::string::npos);
  EXPECT_EQ(error(json::array({1})), "options: expected an object of kbv eval's options, got [1]");
  EXPECT_EQ(error({{"timing_inputs", "fresh"}, {"timing_sets", 3}}),
            "options.timing_sets: only with timing_inputs 'sets' (fresh draws have no input sets)");
}

TEST(ServiceOptions, AppliedAsKbvEvalAppliesItsFlags) {
  CheckedOptions c = check_options({{"protocol", "kernelbench"}, {"precision", "bf16"}, {"trials", 2}, {"seed", 7},
                                    {"baselines", "tf32,compile"}, {"timing_sets", 3}, {"timeout_call", 30}},
                                   cpu_limits());
  ASSERT_TRUE(c.ok()) << c.error;
  EvalOptions o;
  ASSERT_EQ(apply_options(c.canonical, o), "");
  Protocol expected = kernelbench_protocol();
  expected.trials = 2;
  set_precision(expected, "bf16");
  EXPECT_EQ(o.protocol.name, "kernelbench-paper");  // the alias kernelbench names the paper's protocol
  EXPECT_EQ(o.protocol.trials, 2);
  EXPECT_EQ(o.protocol.precision, "bf16");
  EXPECT_EQ(o.protocol.atol, expected.atol);
  EXPECT_EQ(o.protocol.seed, std::optional<uint64_t>(7));
  EXPECT_EQ(o.protocol.timing.baselines, (std::vector<std::string>{"tf32", "compile"}));
  EXPECT_EQ(o.protocol.timing.sets, 3);
  EXPECT_FALSE(o.protocol.timing.fresh);  // sets given: cycled sets, as --timing-sets
  EXPECT_EQ(o.timeouts.call_s, 30);
  EXPECT_EQ(o.device, "cpu");
  EXPECT_NE(apply_options(json::array(), o), "");
}

class ServiceApi : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("kbv-service-test-" + std::to_string(::getpid()));
    fs::create_directories(root / "level1");
    ASSERT_EQ(write_file_atomic(root / "level1" / "19_ReLU.py", "class Model: pass\n"), "");
    std::string error;
    ProblemIndex index = index_problems({root}, error);
    ASSERT_EQ(error, "");
    ApiConfig config;
    config.limits = cpu_limits();
    config.max_source_bytes = 1000;
    config.max_batch = 3;
    config.max_wait_s = 0.3;
    config.allow_problem_source = true;
    api = std::make_unique<Api>(q, index, config, metrics);
  }
  void TearDown() override { fs::remove_all(root); }
  json good() const {
    return {{"problem", {{"name", "level1/19_ReLU"}}}, {"solution", {{"source", "class ModelNew: pass\n"}}}};
  }
  fs::path root;
  MemoryQueue q;
  Metrics metrics;
  std::unique_ptr<Api> api;
};

TEST_F(ServiceApi, AGoodRequestIsQueuedWithTheProblemsSourceAndCanonicalOptions) {
  Response r = api->submit(good().dump());
  ASSERT_EQ(r.status, 202) << r.body.dump();
  std::string id = r.body["id"];
  ASSERT_EQ(q.jobs.count(id), 1u);
  EXPECT_EQ(q.jobs[id].spec.problem_name, "level1/19_ReLU");
  EXPECT_EQ(q.jobs[id].spec.problem_source, "class Model: pass\n");
  EXPECT_EQ(q.jobs[id].spec.options["device"], "cpu");
  json by_file = good();
  by_file["problem"]["name"] = "level1/19_ReLU.py";
  EXPECT_EQ(api->submit(by_file.dump()).status, 202);
  json by_source = good();
  by_source["problem"] = {{"source", "class Model: pass\n"}};
  EXPECT_EQ(api->submit(by_source.dump()).status, 202);
  EXPECT_EQ(q.submits, 3);
}

TEST_F(ServiceApi, EveryBadRequestGetsItsOwn4xxAndChangesNothing) {
  auto status = [&](const std::string& body) {
    Response r = api->submit(body);
    EXPECT_TRUE(r.body.contains("error")) << body;
    EXPECT_EQ(r.body["error"]["code"], r.status);
    return r.status;
  };
  auto with = [&](const char* key, json value) {
    json j = good();
    j[key] = value;
    return j.dump();
  };
  EXPECT_EQ(status(""), 400);
  EXPECT_EQ(status("{\"problem\": "), 400);
  EXPECT_EQ(status("[1, 2]"), 400);
  EXPECT_EQ(status(json{{"solution", good()["solution"]}}.dump()), 400);  // no problem
  EXPECT_EQ(status(json{{"problem", good()["problem"]}}.dump()), 400);    // no solution
  EXPECT_EQ(status(with("problem", {{"name", "a"}, {"source", "b"}})), 400);
  EXPECT_EQ(status(with("problem", {{"name", 19}})), 400);
  EXPECT_EQ(status(with("problem", {{"path", "/etc/passwd"}})), 400);
  EXPECT_EQ(status(with("solution", {{"source", ""}})), 400);
  EXPECT_EQ(status(with("solution", {{"source", std::string(1001, 'x')}})), 400);
  EXPECT_EQ(status(with("extra", 1)), 400);
  EXPECT_EQ(status(with("problem", {{"name", "level1/20_LeakyReLU"}})), 422);
  EXPECT_EQ(status(with("problem", {{"name", "../level1/19_ReLU"}})), 422);
  EXPECT_EQ(status(with("options", {{"trials", 0}})), 422);
  EXPECT_EQ(status(with("options", {{"device", "tpu"}})), 422);
  EXPECT_EQ(q.submits, 0);
  EXPECT_TRUE(q.jobs.empty());
}

TEST_F(ServiceApi, AProblemSourceIsRefusedUnlessTheServerAllowsIt) {
  std::string error;
  ApiConfig closed;
  closed.limits = cpu_limits();
  Api strict(q, index_problems({root}, error), closed, metrics);
  json by_source = good();
  by_source["problem"] = {{"source", "import os\nos.system('touch /tmp/owned')\n"}};
  Response r = strict.submit(by_source.dump());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("--allow-problem-source"), std::string::npos);
  EXPECT_EQ(strict.submit(good().dump()).status, 202);  // by name: fine
  EXPECT_EQ(q.submits, 1);
}

TEST_F(ServiceApi, ABatchWithOneBadItemSubmitsNothing) {
  json bad = good();
  bad["options"] = {{"precision", "fp8"}};
  Response r = api->submit_batch(json{{"evaluations", {good(), bad}}}.dump());
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("evaluations[1].options.precision"), std::string::npos);
  EXPECT_EQ(api->submit_batch(json{{"evaluations", {good(), good(), good(), good()}}}.dump()).status, 413);
  EXPECT_EQ(api->submit_batch(json{{"evaluations", json::array()}}.dump()).status, 400);
  EXPECT_EQ(api->submit_batch(json{{"evaluation", {good()}}}.dump()).status, 400);
  EXPECT_EQ(q.submits, 0);
  Response ok = api->submit_batch(json{{"evaluations", {good(), good()}}}.dump());
  ASSERT_EQ(ok.status, 202);
  EXPECT_EQ(ok.body["ids"].size(), 2u);
}

TEST_F(ServiceApi, GetAnswersTheStatusTheRecordAndLongPolls) {
  std::string id = api->submit(good().dump()).body["id"];
  EXPECT_EQ(api->get("nope", "").status, 404);
  EXPECT_EQ(api->get(id, "soon").status, 400);
  EXPECT_EQ(api->get(id, "-1").status, 400);
  auto t0 = std::chrono::steady_clock::now();
  Response queued = api->get(id, "100");  // capped at max_wait_s = 0.3
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(queued.body["status"], "queued");
  EXPECT_FALSE(queued.body.contains("record"));
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 5.0);
  q.jobs[id].state = queue::State::done;
  q.jobs[id].record["verdict"] = "correct";
  Response done = api->get(id, "10");
  EXPECT_EQ(done.body["status"], "done");
  EXPECT_EQ(done.body["record"]["verdict"], "correct");
  // The same pair again: the done job, without running.
  Response again = api->submit(good().dump());
  EXPECT_EQ(again.body["id"], id);
  EXPECT_EQ(again.body["status"], "done");
}

TEST_F(ServiceApi, ADatabaseThatDoesNotAnswerIs503NotACrash) {
  q.broken = true;
  EXPECT_EQ(api->submit(good().dump()).status, 503);
  EXPECT_EQ(api->get("j1", "").status, 503);
  EXPECT_EQ(api->health().status, 503);
  EXPECT_NE(api->metrics_text().find("kbv_queue_up 0"), std::string::npos);
}

TEST(ServiceMetrics, PrometheusTextHasTheQueueTheVerdictsTheCacheAndThePhases) {
  Metrics m;
  json record = {{"verdict", "correct"}, {"build", {{"seconds", 1.5}, {"cached", true}}},
                 {"phase_seconds", {{"build", 0.5}, {"trials", 2.0}}}};
  m.evaluation_finished(record, 1000);
  record["build"]["cached"] = false;
  m.evaluation_finished(record, 1030);
  m.answered(202);
  queue::Counts c;
  c.queued = 4;
  c.done = 2;
  std::string text = m.render(c, 1070);  // the first completion is older than a minute
  for (const char* line : {"kbv_queue_depth 4\n", "kbv_jobs{state=\"done\"} 2\n", "kbv_evaluations_per_minute 1\n",
                           "kbv_evaluations_total{verdict=\"correct\"} 2\n", "kbv_build_cache_hit_ratio 0.5\n",
                           "kbv_phase_seconds_sum{phase=\"trials\"} 4.000000\n",
                           "kbv_phase_seconds_count{phase=\"build\"} 2\n", "kbv_http_responses_total{code=\"202\"} 1\n",
                           "# TYPE kbv_jobs gauge\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(ServiceMetrics, BuildsMadeAheadCountOnceAtTheBuilder) {
  Metrics m;
  m.build_made(false, 12.5);  // a builder compiled it
  m.build_made(true, 0.5);    // a builder found it in the cache
  json behind = {{"verdict", "correct"}, {"build", {{"seconds", 0.01}, {"cached", true}}}};
  m.evaluation_finished(behind, 1000, false);  // the evaluation behind the builder: not a second hit
  m.evaluation_finished(behind, 1000, false);
  json compiled_here = {{"verdict", "correct"}, {"build", {{"seconds", 20.0}, {"cached", false}}}};
  m.evaluation_finished(compiled_here, 1000, false);  // handed on unbuilt, compiled by the evaluator: a miss
  std::string text = m.render(std::nullopt, 1001);
  for (const char* line : {"kbv_build_stages_total 2\n", "kbv_build_stage_seconds_sum 13.000000\n",
                           "kbv_build_stage_seconds_count 2\n", "kbv_build_cache_hits_total 1\n",
                           "kbv_build_cache_misses_total 2\n", "kbv_evaluations_total{verdict=\"correct\"} 3\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(ServiceServer, ListenIsHostColonPort) {
  std::string host;
  int port = -1;
  EXPECT_EQ(parse_listen("127.0.0.1:8080", host, port), "");
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  EXPECT_EQ(parse_listen("[::1]:0", host, port), "");
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  EXPECT_NE(parse_listen("8080", host, port), "");
  EXPECT_NE(parse_listen("h:99999", host, port), "");
  EXPECT_NE(parse_listen("h:80x", host, port), "");
}

}  // namespace service_test
}  // namespace kbv::service
