// `kbv generate` against a real HTTP server on loopback (fake_chat_server.py) that speaks the
// chat-completions protocol and replays recorded answers. No test reaches the network.
#include "generate/generate.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "problem/problem.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kbv {
namespace generate_test {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const fs::path kSource = KBV_SOURCE_DIR;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read(const fs::path& p) {
  FileText t = read_file(p);
  return t.ok ? t.text : "<" + t.error + ">";
}

json read_json(const fs::path& p) { return json::parse(read(p), nullptr, false); }

// A reply whose content is a fenced Python block.
json code_reply(const std::string& code, const std::string& before = "Here it is.\n\n",
                const std::string& after = "\n\nThis fuses the ops.") {
  return {{"content", before + "```python\n" + code + "\n```" + after}};
}

// The fake server, started on a free loopback port; killed on destruction.
class FakeServer {
 public:
  FakeServer(const fs::path& dir, const json& routes) : dir_(dir) {
    std::ofstream(dir_ / "script.json") << json{{"routes", routes}}.dump(2);
    fs::remove(dir_ / "port");
    fs::remove(dir_ / "requests.jsonl");
    SpawnOptions o;
    o.argv = {KBV_DEFAULT_PYTHON, "-I", (kSource / "tests/generate/fake_chat_server.py").string(), "--script",
              (dir_ / "script.json").string(), "--log", (dir_ / "requests.jsonl").string(), "--port-file",
              (dir_ / "port").string(), "--lifetime", "120"};
    o.log_path = dir_ / "server.log";
    o.protocol_pipes = false;
    std::string error;
    auto child = spawn(o, error);
    EXPECT_TRUE(child.has_value()) << error;
    if (!child) return;
    pid_ = child->pid;
    for (int i = 0; i < 300 && !fs::exists(dir_ / "port"); ++i) std::this_thread::sleep_for(50ms);
    port_ = read(dir_ / "port");
    EXPECT_FALSE(port_.empty() || port_[0] == '<') << "the fake server did not start: " << read(dir_ / "server.log");
  }
  ~FakeServer() {
    if (pid_ > 0) kill_group(pid_);
  }
  std::string url() const { return "http://127.0.0.1:" + port_ + "/v1"; }
  std::string host() const { return "127.0.0.1:" + port_; }

  // Every request received so far.
  std::vector<json> requests() const {
    std::vector<json> out;
    std::ifstream in(dir_ / "requests.jsonl");
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(json::parse(line));
    return out;
  }
  size_t requests_for(int route) const {
    size_t n = 0;
    for (const json& r : requests()) n += r["route"] == route;
    return n;
  }

 private:
  fs::path dir_;
  int pid_ = -1;
  std::string port_;
};

class Generate : public ::testing::Test {
 protected:
  void SetUp() override {
    // Loopback only: no proxy may take the requests elsewhere.
    for (const char* v : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"})
      ::unsetenv(v);
    dir_ = fs::temp_directory_path() / ("kbv_generate_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "server");
    problems_ = dir_ / "dataset";
    run_ = dir_ / "run";
    problem("level1/1_Alpha.py", "ALPHA_MARKER");
    problem("level1/2_Beta.py", "BETA_MARKER");
    problem("level2/1_Gamma.py", "GAMMA_MARKER");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void problem(const std::string& rel, const std::string& marker) {
    fs::create_directories((problems_ / rel).parent_path());
    std::ofstream(problems_ / rel) << "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                                      "    \"\"\"" << marker << "\"\"\"\n\n    def forward(self, x):\n"
                                      "        return torch.relu(x)\n\n\nsize = 16\n\n\ndef get_inputs():\n"
                                      "    return [torch.randn(size)]\n\n\ndef get_init_inputs():\n    return []\n";
  }

  GenerateOptions options(const FakeServer& server, int samples = 1) {
    GenerateOptions o;
    o.problems_dir = problems_;
    o.run_dir = run_;
    o.samples = samples;
    o.model = "test-model";
    o.endpoint = server.url();
    o.api_key_env = "KBV_TEST_API_KEY";
    o.concurrency = 2;
    o.http.request_timeout_s = 5;
    o.http.retries = 3;
    o.http.backoff_s = 0.01;
    o.prompt.dir = kSource / "prompts";
    return o;
  }

  json sidecar(int level, int problem, int sample) {
    return read_json(run_ / (sample_stem(level, problem, sample) + "_response.json"));
  }
  fs::path kernel(int level, int problem, int sample) {
    return run_ / (sample_stem(level, problem, sample) + "_kernel.py");
  }
  fs::path response(int level, int problem, int sample) {
    return run_ / (sample_stem(level, problem, sample) + "_response.md");
  }

  // The kbv binary, with its output.
  RunResult kbv(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {KBV_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, env, 60s);
  }

  fs::path dir_, problems_, run_;
};

const json kAlpha = "ALPHA_MARKER", kBeta = "BETA_MARKER", kGamma = "GAMMA_MARKER";

// ---------------------------------------------------------------------------------------------
TEST(Endpoint, UrlsAndHosts) {
  std::string error;
  EXPECT_EQ(chat_completions_url("https://api.openai.com/v1", error), "https://api.openai.com/v1/chat/completions");
  EXPECT_EQ(chat_completions_url("http://127.0.0.1:8000/v1/", error), "http://127.0.0.1:8000/v1/chat/completions");
  EXPECT_EQ(chat_completions_url("http://h/v1/chat/completions", error), "http://h/v1/chat/completions");
  EXPECT_EQ(chat_completions_url("localhost:8000/v1", error), "");
  EXPECT_TRUE(has(error, "localhost:8000/v1")) << error;
  EXPECT_EQ(url_host("https://user:secret@api.example.com:8443/v1/chat/completions"), "api.example.com:8443");
  EXPECT_EQ(url_host("http://127.0.0.1:8000/v1"), "127.0.0.1:8000");
}

TEST_F(Generate, WritesTheRunFolderAndRecordsEachSample) {
  FakeServer server(dir_ / "server",
                    json::array({{{"match", kAlpha},
                                  {"replies", {code_reply("ALPHA_CODE = 1")}}},
                                 {{"match", kBeta},
                                  {"replies",
                                   {{{"content", "First:\n```python\nFIRST = 1\n```\nthen\n```python\nSECOND = 2\n```\n"},
                                     {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 400}}}}}}},
                                 {{"match", kGamma}, {"replies", {code_reply("GAMMA_CODE = 3")}}}}));
  ::setenv("KBV_TEST_API_KEY", "sk-test-secret-123", 1);
  GenerateOptions o = options(server, 2);
  o.temperature = 0.7;
  o.max_tokens = 4096;
  o.reasoning_effort = "high";
  o.extra_body = {{"top_p", 0.95}};
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  ::unsetenv("KBV_TEST_API_KEY");

  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(read(kernel(1, 1, s)), "ALPHA_CODE = 1\n");
    EXPECT_EQ(read(kernel(1, 2, s)), "FIRST = 1\n");  // the first of two blocks
    EXPECT_EQ(read(kernel(2, 1, s)), "GAMMA_CODE = 3\n");
    EXPECT_TRUE(has(read(response(1, 1, s)), "This fuses the ops."));
  }
  EXPECT_FALSE(fs::exists(kernel(1, 1, 2)));

  json side = sidecar(1, 2, 1);
  EXPECT_EQ(side["status"], "ok");
  EXPECT_EQ(side["level"], 1);
  EXPECT_EQ(side["problem_id"], 2);
  EXPECT_EQ(side["sample_id"], 1);
  EXPECT_EQ(side["model"], "test-model");
  EXPECT_EQ(side["endpoint_host"], server.host());
  EXPECT_EQ(side["prompt_tokens"], 1000);
  EXPECT_EQ(side["completion_tokens"], 400);
  EXPECT_TRUE(side["cost_usd"].is_null());
  EXPECT_EQ(side["attempts"], 1);
  EXPECT_EQ(side["finish_reason"], "stop");
  EXPECT_GT(side["latency_s"].get<double>(), 0);
  EXPECT_EQ(side["extraction"]["block_index"], 0);
  EXPECT_EQ(side["extraction"]["block_count"], 2);
  EXPECT_EQ(side["request"]["temperature"], 0.7);
  EXPECT_EQ(side["request"]["max_tokens"], 4096);
  EXPECT_EQ(side["request"]["reasoning_effort"], "high");
  EXPECT_EQ(side["request"]["top_p"], 0.95);
  EXPECT_EQ(side["prompt"]["variant"], "one_shot");
  EXPECT_EQ(side["prompt"]["input_blind"], false);
  EXPECT_EQ(side["prompt"]["template_hash"].get<std::string>().size(), 64u);
  std::string prompt = read(run_ / side["prompt"]["file"].get<std::string>());
  EXPECT_TRUE(has(prompt, "BETA_MARKER")) << prompt;

  std::vector<json> requests = server.requests();
  ASSERT_EQ(requests.size(), 6u);
  for (const json& r : requests) {
    EXPECT_EQ(r["path"], "/v1/chat/completions");
    EXPECT_EQ(r["headers"]["authorization"], "Bearer sk-test-secret-123");
    EXPECT_EQ(r["headers"]["content-type"], "application/json");
    EXPECT_EQ(r["body"]["model"], "test-model");
    EXPECT_EQ(r["body"]["temperature"], 0.7);
    EXPECT_EQ(r["body"]["max_tokens"], 4096);
    EXPECT_EQ(r["body"]["reasoning_effort"], "high");
    EXPECT_EQ(r["body"]["top_p"], 0.95);
    ASSERT_EQ(r["body"]["messages"].size(), 1u);
    EXPECT_EQ(r["body"]["messages"][0]["role"], "user");
  }
  // The key is sent, never written.
  for (const auto& f : fs::recursive_directory_iterator(run_)) {
    if (!f.is_regular_file()) continue;
    EXPECT_FALSE(has(read(f.path()), "sk-test-secret-123")) << f.path();
  }

  // The run reads as a KernelBench run folder.
  RunDiscovery d = discover_run(run_);
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.samples.size(), 6u);
  EXPECT_TRUE(d.warnings.empty()) << ::testing::PrintToString(d.warnings);
}

TEST_F(Generate, RetriesA429AndA500ThenSucceeds) {
  FakeServer server(dir_ / "server",
                    json::array({{{"match", kAlpha},
                                  {"replies",
                                   {{{"status", 429}, {"error", "rate limited"}, {"headers", {{"Retry-After", "0"}}}},
                                    {{"status", 500}, {"error", "upstream exploded"}},
                                    code_reply("ALPHA_CODE = 1")}}}}));
  GenerateOptions o = options(server);
  o.level = 1;
  fs::remove(problems_ / "level1/2_Beta.py");
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  json side = sidecar(1, 1, 0);
  EXPECT_EQ(side["status"], "ok");
  EXPECT_EQ(side["attempts"], 3);
  ASSERT_EQ(side["attempt_errors"].size(), 2u);
  EXPECT_TRUE(has(side["attempt_errors"][0], "attempt 1: HTTP 429: rate limited")) << side["attempt_errors"];
  EXPECT_TRUE(has(side["attempt_errors"][1], "attempt 2: HTTP 500: upstream exploded")) << side["attempt_errors"];
  EXPECT_EQ(read(kernel(1, 1, 0)), "ALPHA_CODE = 1\n");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(Generate, ATimeoutIsRetried) {
  json slow = code_reply("SLOW = 1");
  slow["delay_s"] = 3;
  FakeServer server(dir_ / "server",
                    json::array({{{"match", kAlpha}, {"replies", {slow, code_reply("FAST = 1")}}}}));
  GenerateOptions o = options(server);
  o.level = 1;
  fs::remove(problems_ / "level1/2_Beta.py");
  o.http.request_timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2900ms);  // did not wait for the slow answer
  json side = sidecar(1, 1, 0);
  EXPECT_EQ(side["attempts"], 2);
  EXPECT_TRUE(has(side["attempt_errors"][0], "no answer within 1 s")) << side["attempt_errors"];
  EXPECT_EQ(read(kernel(1, 1, 0)), "FAST = 1\n");
}

TEST_F(Generate, ARepeatedNonRetryableAnswerStopsTheRun) {
  // Every request gets "400 model does not exist": after three in a row nothing more is sent.
  json routes = json::array({{{"match", ""}, {"replies", {{{"status", 400}, {"error", "model does not exist"}}}}}});
  FakeServer server(dir_ / "server", routes);
  GenerateOptions o = options(server, 4);  // 3 problems x 4 samples = 12 requests to make
  o.concurrency = 1;
  std::vector<std::string> lines;
  Outcome out = generate_run(o, [&](const Notice& n) { lines.push_back(n.text); });
  EXPECT_EQ(out.status, Status::incomplete);
  EXPECT_TRUE(has(out.message, "same answer to 3 requests in a row (HTTP 400: model does not exist)")) << out.message;
  EXPECT_TRUE(has(out.message, "9 not sent")) << out.message;
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(Generate, RetriesAreShownAndCountedInGoodGrammar) {
  json routes = json::array({{{"match", kAlpha}, {"replies", {{{"status", 503}, {"error", "overloaded"}}}}},
                             {{"match", ""}, {"replies", {code_reply("X = 1")}}}});
  FakeServer server(dir_ / "server", routes);
  GenerateOptions o = options(server);
  o.level = 1;
  o.http.retries = 1;
  std::vector<std::string> lines;
  generate_run(o, [&](const Notice& n) { lines.push_back(n.text); });
  bool shown = false;
  for (const auto& l : lines) shown |= has(l, "level 1 problem 1 sample 0: attempt 1 failed (HTTP 503: overloaded); retrying in");
  EXPECT_TRUE(shown) << ::testing::PrintToString(lines);
  EXPECT_EQ(sidecar(1, 1, 0)["error"], "HTTP 503: overloaded (gave up after 2 attempts)");
  o.http.retries = 0;
  fs::remove(run_ / (sample_stem(1, 1, 0) + "_response.json"));
  generate_run(o, {});
  EXPECT_EQ(sidecar(1, 1, 0)["error"], "HTTP 503: overloaded (gave up after 1 attempt)");
}

TEST_F(Generate, FailedRequestsAreReportedAndARerunFillsThem) {
  json routes = json::array({{{"match", kAlpha}, {"replies", {{{"status", 503}, {"error", "overloaded"}}}}},
                             {{"match", kBeta}, {"replies", {{{"status", 400}, {"error", "bad model name"}}}}},
                             {{"match", kGamma}, {"replies", {code_reply("GAMMA = 1")}}}});
  {
    FakeServer server(dir_ / "server", routes);
    GenerateOptions o = options(server);
    o.http.retries = 2;
    EXPECT_EQ(generate_run(o, {}).status, Status::incomplete);
    EXPECT_EQ(server.requests_for(0), 3u);  // 503: the first attempt and two retries
    EXPECT_EQ(server.requests_for(1), 1u);  // 400: not retried
    json alpha = sidecar(1, 1, 0);
    EXPECT_EQ(alpha["status"], "request_failed");
    EXPECT_TRUE(has(alpha["error"], "HTTP 503: overloaded (gave up after 3 attempts)")) << alpha["error"];
    EXPECT_EQ(sidecar(1, 2, 0)["error"], "HTTP 400: bad model name");
    for (int p : {1, 2}) {
      EXPECT_FALSE(fs::exists(kernel(1, p, 0)));
      EXPECT_FALSE(fs::exists(response(1, p, 0)));
    }
    EXPECT_TRUE(fs::exists(kernel(2, 1, 0)));
    // Failed requests are not samples of the run.
    EXPECT_EQ(discover_run(run_).samples.size(), 1u);
  }
  routes[0]["replies"] = {code_reply("ALPHA = 1")};
  routes[1]["replies"] = {code_reply("BETA = 1")};
  FakeServer server(dir_ / "server", routes);
  EXPECT_EQ(generate_run(options(server), {}).status, Status::ok);
  EXPECT_EQ(server.requests_for(0), 1u);
  EXPECT_EQ(server.requests_for(1), 1u);
  EXPECT_EQ(server.requests_for(2), 0u);  // already done
  EXPECT_EQ(read(kernel(1, 1, 0)), "ALPHA = 1\n");
  EXPECT_EQ(sidecar(1, 2, 0)["status"], "ok");
}

TEST_F(Generate, AnAnswerWithoutCodeIsRecordedNotDropped) {
  FakeServer server(dir_ / "server",
                    json::array({{{"match", kAlpha},
                                  {"replies", {{{"content", "I would rather not."}, {"finish_reason", "length"}}}}},
                                 {{"match", kBeta}, {"replies", {{{"content", "```python\n\n```\n"}}}}},
                                 {{"match", kGamma}, {"replies", {code_reply("GAMMA = 1")}}}}));
  EXPECT_EQ(generate_run(options(server), {}).status, Status::ok);
  EXPECT_FALSE(fs::exists(kernel(1, 1, 0)));
  EXPECT_EQ(read(response(1, 1, 0)), "I would rather not.");
  json alpha = sidecar(1, 1, 0);
  EXPECT_EQ(alpha["status"], "no_code_block");
  EXPECT_EQ(alpha["error"], "no fenced code block in the answer");
  EXPECT_EQ(alpha["finish_reason"], "length");
  EXPECT_EQ(alpha["prompt_tokens"], 100);
  EXPECT_FALSE(fs::exists(kernel(1, 2, 0)));
  EXPECT_EQ(sidecar(1, 2, 0)["status"], "no_code_block");
  EXPECT_EQ(sidecar(1, 2, 0)["error"], "the first code block is empty");

  // Evaluation sees the raw answer as the sample, and it fails to load with the reason.
  RunDiscovery d = discover_run(run_);
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.samples[0].path, response(1, 1, 0));
  SolutionSource s = load_solution(d.samples[0].path);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(has(s.error, "no fenced code block")) << s.error;
  EXPECT_FALSE(load_solution(d.samples[1].path).ok);

  // Done: a re-run asks nothing.
  size_t before = server.requests().size();
  EXPECT_EQ(generate_run(options(server), {}).status, Status::ok);
  EXPECT_EQ(server.requests().size(), before);
}

TEST_F(Generate, CodeInsideAReasoningSectionIsSkipped) {
  FakeServer server(
      dir_ / "server",
      json::array({{{"match", kAlpha},
                    {"replies", {{{"content", "<think>\nDraft:\n```python\nWRONG = 1\n```\n</think>\n"
                                              "```python\nRIGHT = 1\n```\n"}}}}},
                   {{"match", kBeta},
                    {"replies", {{{"reasoning_content", "Draft:\n```python\nWRONG = 2\n```"},
                                  {"content", "```python\nRIGHT = 2\n```"}}}}},
                   {{"match", kGamma},
                    {"replies", {{{"reasoning_content", "```python\nWRONG = 3\n```"}, {"content", "Done."}}}}}}));
  EXPECT_EQ(generate_run(options(server), {}).status, Status::ok);
  EXPECT_EQ(read(kernel(1, 1, 0)), "RIGHT = 1\n");
  EXPECT_EQ(sidecar(1, 1, 0)["extraction"]["skipped_in_reasoning"], 1);
  EXPECT_EQ(read(kernel(1, 2, 0)), "RIGHT = 2\n");
  std::string raw = read(response(1, 2, 0));
  EXPECT_TRUE(raw.starts_with("<think>\nDraft:\n```python\nWRONG = 2\n```\n</think>\n\n```python\nRIGHT = 2")) << raw;
  EXPECT_EQ(sidecar(1, 2, 0)["reasoning_separate"], true);
  EXPECT_FALSE(fs::exists(kernel(2, 1, 0)));
  json gamma = sidecar(2, 1, 0);
  EXPECT_EQ(gamma["status"], "no_code_block");
  EXPECT_EQ(gamma["error"], "no fenced code block in the answer (1 inside the reasoning section, not used)");
}

TEST_F(Generate, ARerunFillsOnlyMissingSamples) {
  FakeServer server(dir_ / "server",
                    json::array({{{"match", kAlpha}, {"replies", {code_reply("A0"), code_reply("A1"), code_reply("A2")}}},
                                 {{"match", kBeta}, {"replies", {code_reply("B0"), code_reply("B1"), code_reply("B2")}}},
                                 {{"match", kGamma}, {"replies", {code_reply("G")}}}}));
  GenerateOptions o = options(server, 1);
  o.level = 1;
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  EXPECT_EQ(server.requests().size(), 2u);
  // A sample written by someone else (upstream KernelBench, by hand) counts as done.
  std::ofstream(kernel(1, 2, 2)) << "MINE\n";
  o.samples = 3;
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  EXPECT_EQ(server.requests_for(0), 3u);
  EXPECT_EQ(server.requests_for(1), 2u);
  EXPECT_EQ(server.requests_for(2), 0u);
  EXPECT_EQ(read(kernel(1, 1, 0)), "A0\n");
  EXPECT_EQ(read(kernel(1, 2, 2)), "MINE\n");
  EXPECT_EQ(discover_run(run_).samples.size(), 6u);
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  EXPECT_EQ(server.requests().size(), 5u);
}

TEST_F(Generate, CostFromTheEndpointOrFromPrices) {
  json with_cost = code_reply("A");
  with_cost["usage"] = {{"prompt_tokens", 2000}, {"completion_tokens", 1000}, {"cost", 0.25}};
  json without = code_reply("B");
  without["usage"] = {{"prompt_tokens", 2000000}, {"completion_tokens", 1000000}};
  FakeServer server(dir_ / "server", json::array({{{"match", kAlpha}, {"replies", {with_cost}}},
                                                  {{"match", kBeta}, {"replies", {without}}},
                                                  {{"match", kGamma}, {"replies", {without}}}}));
  GenerateOptions o = options(server);
  o.level = 1;
  o.price_input = 1.5;
  o.price_output = 10;
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  EXPECT_EQ(sidecar(1, 1, 0)["cost_usd"], 0.25);
  EXPECT_EQ(sidecar(1, 1, 0)["cost_source"], "endpoint");
  EXPECT_DOUBLE_EQ(sidecar(1, 2, 0)["cost_usd"].get<double>(), 2 * 1.5 + 1 * 10);
  EXPECT_EQ(sidecar(1, 2, 0)["cost_source"], "--price-input/--price-output");
  o.level = 2;
  o.price_input.reset();
  o.price_output.reset();
  EXPECT_EQ(generate_run(o, {}).status, Status::ok);
  EXPECT_TRUE(sidecar(2, 1, 0)["cost_usd"].is_null());
}

TEST_F(Generate, NoServerMeansAFailedRequestWithTheReason) {
  FakeServer server(dir_ / "server", json::array());
  GenerateOptions o = options(server);
  o.level = 2;
  o.endpoint = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  o.http.retries = 1;
  EXPECT_EQ(generate_run(o, {}).status, Status::incomplete);
  json side = sidecar(2, 1, 0);
  EXPECT_EQ(side["status"], "request_failed");
  EXPECT_EQ(side["attempts"], 2);
  EXPECT_TRUE(has(side["error"], "127.0.0.1")) << side["error"];
}

// ---------------------------------------------------------------------------------------------
// The command line.

TEST_F(Generate, CommandLineDryRunSendsAndWritesNothing) {
  FakeServer server(dir_ / "server", json::array());
  RunResult r = kbv({"generate", "--problems", problems_.string(), "--run", run_.string(), "--model", "m", "--endpoint",
                     server.url(), "--level", "2", "--samples", "3", "--prompt", "zero_shot", "--input-blind",
                     "--hardware", "H100", "--dry-run"});
  EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.output;
  EXPECT_TRUE(has(r.output, "3 sample(s) to generate with m at " + server.host())) << r.output;
  EXPECT_TRUE(has(r.output, "GAMMA_MARKER"));
  EXPECT_TRUE(has(r.output, "Target hardware: NVIDIA H100"));
  EXPECT_TRUE(has(r.output, "input sizes are not given"));
  EXPECT_FALSE(has(r.output, "def get_inputs"));
  EXPECT_FALSE(fs::exists(run_));
  EXPECT_TRUE(server.requests().empty());

  RunResult bad = kbv({"generate", "--problems", problems_.string(), "--run", run_.string(), "--model", "m",
                       "--extra-body", "[1]"});
  EXPECT_EQ(bad.status.code, 2);
  EXPECT_TRUE(has(bad.output, "--extra-body must be a JSON object")) << bad.output;
  RunResult no_model = kbv({"generate", "--problems", problems_.string(), "--run", run_.string()});
  EXPECT_NE(no_model.status.code, 0);
  EXPECT_TRUE(has(no_model.output, "--model")) << no_model.output;
}

TEST_F(Generate, CommandLineDeviceCpuAsksForCppCpuKernels) {
  FakeServer server(dir_ / "server", json::array({{{"match", kAlpha}, {"replies", {code_reply("ALPHA_CPU = 1")}}}}));
  RunResult r = kbv({"generate", "--problems", problems_.string(), "--run", run_.string(), "--model", "m", "--endpoint",
                     server.url(), "--level", "1", "--only", "1", "--samples", "1", "--device", "cpu", "--api-key-env",
                     "KBV_TEST_NO_KEY"});
  EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.output;
  EXPECT_TRUE(has(r.output, "CPU one_shot prompt")) << r.output;
  std::vector<json> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string prompt = requests[0]["body"]["messages"][0]["content"];
  EXPECT_TRUE(has(prompt, "custom C++ CPU\nkernels")) << prompt;
  EXPECT_TRUE(has(prompt, "ALPHA_MARKER"));
  EXPECT_FALSE(has(prompt, "__global__")) << prompt;
  EXPECT_EQ(read(kernel(1, 1, 0)), "ALPHA_CPU = 1\n");
  EXPECT_EQ(sidecar(1, 1, 0)["prompt"]["device"], "cpu");

  RunResult bad = kbv({"generate", "--problems", problems_.string(), "--run", run_.string(), "--model", "m",
                       "--device", "gpu", "--dry-run"});
  EXPECT_EQ(bad.status.code, 2) << bad.output;
}

TEST_F(Generate, CommandLineCtrlCKeepsWhatWasWritten) {
  json slow = code_reply("BETA_SLOW");
  slow["delay_s"] = 20;
  json routes = json::array({{{"match", kAlpha}, {"replies", {code_reply("ALPHA")}}},
                             {{"match", kBeta}, {"replies", {slow, code_reply("BETA")}}}});
  FakeServer server(dir_ / "server", routes);
  SpawnOptions so;
  so.argv = {KBV_BINARY, "generate", "--problems", problems_.string(), "--run", run_.string(), "--model", "m",
             "--endpoint", server.url(), "--level", "1", "--samples", "1", "--concurrency", "2",
             "--api-key-env", "KBV_TEST_NO_KEY"};
  so.log_path = dir_ / "first.log";
  so.protocol_pipes = false;
  std::string error;
  auto child = spawn(so, error);
  ASSERT_TRUE(child) << error;
  // Wait for Alpha's sample and for Beta's request to be in flight, then Ctrl-C.
  for (int i = 0; i < 200 && !(fs::exists(kernel(1, 1, 0)) && server.requests_for(1) == 1); ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(fs::exists(kernel(1, 1, 0))) << read(so.log_path);
  ::kill(child->pid, SIGINT);
  auto status = wait_for(child->pid, 5000ms);
  ASSERT_TRUE(status.has_value()) << "kbv generate did not stop on SIGINT: " << read(so.log_path);
  EXPECT_TRUE(status->exited && status->code == 130) << status->describe() << "\n" << read(so.log_path);
  EXPECT_TRUE(has(read(so.log_path), "run again to resume")) << read(so.log_path);
  EXPECT_TRUE(has(read(so.log_path), "no API key: $KBV_TEST_NO_KEY is not set")) << read(so.log_path);
  EXPECT_EQ(read(kernel(1, 1, 0)), "ALPHA\n");
  EXPECT_FALSE(fs::exists(response(1, 2, 0)));
  EXPECT_FALSE(fs::exists(run_ / (sample_stem(1, 2, 0) + "_response.json")));

  RunResult again = kbv({"generate", "--problems", problems_.string(), "--run", run_.string(), "--model", "m",
                         "--endpoint", server.url(), "--level", "1", "--samples", "1"});
  EXPECT_TRUE(again.status.exited && again.status.code == 0) << again.output;
  EXPECT_TRUE(has(again.output, "1 sample(s) to generate")) << again.output;
  EXPECT_EQ(read(kernel(1, 2, 0)), "BETA\n");
  EXPECT_EQ(server.requests_for(0), 1u);
  EXPECT_EQ(server.requests_for(1), 2u);
  for (const json& r : server.requests()) EXPECT_FALSE(r["headers"].contains("authorization"));
}

}  // namespace generate_test
}  // namespace kbv
