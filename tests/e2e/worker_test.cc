// `kbv worker` end to end: jobs put in a SQLite queue through the library, evaluated by the kbv
// binary's worker, their records read back from the queue.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "support.h"
#include "queue/queue.h"
#include "record/record.h"

namespace kbv::e2e {
namespace worker_test {

queue::JobSpec spec_of(const std::string& name, const fs::path& problem, const fs::path& solution,
                       nlohmann::json options) {
  queue::JobSpec s;
  s.problem_name = name;
  s.problem_source = read_file(kSource / problem).text;
  s.solution_source = read_file(kSource / solution).text;
  s.options = std::move(options);
  return s;
}

TEST(Worker, EvaluatesAQueuedJobIntoKbvEvalsRecordAndRefusesBadOptions) {
  const fs::path dir = scratch_dir("worker", "evaluates");
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  std::string error;
  auto q = queue::Queue::open(url, error);
  ASSERT_NE(q, nullptr) << error;
  const nlohmann::json cpu = {{"device", "cpu"}, {"timing", "off"}, {"trials", 1}};
  auto good = q->submit(spec_of("level1/106_Sigmoid", "problems/level1/106_Sigmoid.py",
                                "examples/level1/106_Sigmoid/cpu_honest.py", cpu),
                        error);
  ASSERT_TRUE(good) << error;
  nlohmann::json zero_trials = cpu;
  zero_trials["trials"] = 0;
  auto bad = q->submit(spec_of("level1/106_Sigmoid", "problems/level1/106_Sigmoid.py",
                               "examples/level1/106_Sigmoid/cpu_honest.py", zero_trials),
                       error);
  ASSERT_TRUE(bad) << error;
  nlohmann::json own_python = cpu;
  own_python["python"] = "/bin/sh";
  auto host = q->submit(spec_of("level1/106_Sigmoid", "problems/level1/106_Sigmoid.py",
                                "examples/level1/106_Sigmoid/cpu_honest.py", own_python),
                        error);
  ASSERT_TRUE(host) << error;

  Outcome o = run_kbv({"worker", "--queue", url, "--drain"}, {}, 1500);
  EXPECT_EQ(o.code, 0) << o.output;

  auto job = q->get(*good, error);
  ASSERT_TRUE(job) << error;
  ASSERT_EQ(job->state, queue::State::done) << job->error << "\n" << o.output;
  // The record is kbv eval --json's: it reads back as a Record and writes back to the same JSON.
  RecordRead read = record_from_json(job->record);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(to_json(read.record), job->record);
  EXPECT_EQ(job->record["verdict"], "correct") << job->record.dump(2).substr(0, 2000);
  EXPECT_EQ(read.record.level, 1);
  EXPECT_EQ(read.record.problem_id, 106);

  auto refused = q->get(*bad, error);
  ASSERT_TRUE(refused) << error;
  EXPECT_EQ(refused->state, queue::State::failed);
  EXPECT_EQ(refused->attempts, 1) << "bad options are not retried";
  EXPECT_NE(refused->error.find("--trials"), std::string::npos) << refused->error;
  auto own = q->get(*host, error);
  ASSERT_TRUE(own) << error;
  EXPECT_EQ(own->state, queue::State::failed);
  EXPECT_NE(own->error.find("decided by the worker's host"), std::string::npos) << own->error;

  // The same job again is answered from the queue without running.
  auto again = q->submit(spec_of("level1/106_Sigmoid", "problems/level1/106_Sigmoid.py",
                                 "examples/level1/106_Sigmoid/cpu_honest.py", cpu),
                         error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(*again, *good);
}

TEST(Worker, SigtermReleasesTheJobInFlightAndExits) {
  const fs::path dir = scratch_dir("worker", "sigterm");
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  std::string error;
  auto q = queue::Queue::open(url, error);
  ASSERT_NE(q, nullptr) << error;
  // Timing on with a long cap: the evaluation is still running when SIGTERM comes.
  const nlohmann::json options = {{"device", "cpu"}, {"trials", 1}, {"time_cap", 60}, {"rse", 1e-9}};
  auto id = q->submit(spec_of("level1/106_Sigmoid", "problems/level1/106_Sigmoid.py",
                              "examples/level1/106_Sigmoid/cpu_honest.py", options),
                      error);
  ASSERT_TRUE(id) << error;
  SpawnOptions spawn_options;
  spawn_options.argv = {KBV_BINARY, "worker", "--queue", url, "--lease", "600", "--heartbeat", "5"};
  spawn_options.env_set["KBV_CACHE_DIR"] = KBV_TEST_CACHE;
  spawn_options.log_path = dir / "worker.log";
  spawn_options.protocol_pipes = false;
  auto worker = spawn(spawn_options, error);
  ASSERT_TRUE(worker) << error;
  // Wait until the job is running, then a little into its evaluation.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
  while (std::chrono::steady_clock::now() < deadline) {
    auto job = q->get(*id, error);
    if (job && job->state != queue::State::queued) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_EQ(q->get(*id, error)->state, queue::State::running) << tail_file(dir / "worker.log", 4000);
  ASSERT_EQ(::kill(worker->pid, SIGTERM), 0);
  auto status = wait_for(worker->pid, std::chrono::seconds(120));
  if (!status) kill_group(worker->pid);
  ASSERT_TRUE(status) << "kbv worker did not stop within 120 s of SIGTERM";
  EXPECT_TRUE(status->exited && status->code == 130) << status->describe() << "\n"
                                                      << tail_file(dir / "worker.log", 4000);
  auto job = q->get(*id, error);
  ASSERT_TRUE(job) << error;
  EXPECT_EQ(job->state, queue::State::queued) << "the job in flight goes back to the queue";
  EXPECT_NE(job->error.find("released by"), std::string::npos) << job->error;
}

TEST(Worker, EvalWithQueueSubmitsThePairAndWritesTheWorkersRecord) {
  const fs::path dir = scratch_dir("worker", "eval_queue");
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  SpawnOptions spawn_options;
  spawn_options.argv = {KBV_BINARY, "worker", "--queue", url};
  spawn_options.env_set["KBV_CACHE_DIR"] = KBV_TEST_CACHE;
  spawn_options.log_path = dir / "worker.log";
  spawn_options.protocol_pipes = false;
  std::string error;
  auto worker = spawn(spawn_options, error);
  ASSERT_TRUE(worker) << error;
  struct Stop {  // however the test ends: no kbv worker left polling the queue
    pid_t pid;
    ~Stop() {
      ::kill(pid, SIGTERM);
      if (!wait_for(pid, std::chrono::seconds(60))) kill_group(pid);
    }
  } stop{worker->pid};
  const std::vector<std::string> args = {
      "eval", "--problem", (kSource / "problems/level1/106_Sigmoid.py").string(), "--solution",
      (kSource / "examples/level1/106_Sigmoid/cpu_wrong_negative.py").string(), "--device", "cpu", "--timing", "off",
      "--trials", "1", "--queue", url, "--json", (dir / "record.json").string()};
  Outcome o = run_kbv(args, dir / "record.json", 900);
  ASSERT_EQ(o.code, 0) << o.output << "\nthe kbv worker's log:\n" << tail_file(dir / "worker.log", 4000);
  EXPECT_EQ(o.record.value("verdict", ""), "wrong_output") << o.output;
  EXPECT_EQ(o.record.value("problem_id", 0), 106);
  EXPECT_NE(o.output.find("worker "), std::string::npos) << o.output;
  // The same pair again: answered from the queue, the same job.
  const auto job_of = [](const std::string& out) {
    const size_t at = out.find("job ");
    return at == std::string::npos ? std::string() : out.substr(at + 4, 32);
  };
  Outcome again = run_kbv(args, dir / "record.json", 60);
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(job_of(again.output), job_of(o.output)) << o.output << "\n" << again.output;
  // Flags the worker decides are refused.
  Outcome sandbox = run_kbv({"eval", "--problem", args[2], "--solution", args[4], "--sandbox", "off", "--queue", url});
  EXPECT_EQ(sandbox.code, 2) << sandbox.output;
  EXPECT_NE(sandbox.output.find("decided by the kbv worker"), std::string::npos) << sandbox.output;
}

// `kbv eval --run --queue`: a run folder's samples as jobs, evaluated by a kbv worker, stored as
// `kbv eval --run` stores them (the same eval_results.json entries, the same store keys), and
// `kbv report --queue` reads the queue's done jobs as a run.
TEST(Worker, EvalRunWithQueueStoresWhatADirectRunStoresAndReportReadsTheQueue) {
  const fs::path dir = scratch_dir("worker", "run_queue");
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  const std::vector<std::pair<std::string, std::string>> samples = {
      {"level_1_problem_19_sample_0_kernel.py", "examples/level1/19_ReLU/cpu_honest.py"},
      {"level_1_problem_19_sample_1_kernel.py", "examples/level1/19_ReLU/cpu_off_by_one.py"},
      {"level_1_problem_106_sample_0_kernel.py", "examples/level1/106_Sigmoid/cpu_honest.py"},
      {"level_1_problem_106_sample_1_kernel.py", "examples/level1/106_Sigmoid/cpu_wrong_negative.py"}};
  for (const char* run : {"queued", "direct"}) {
    fs::create_directories(dir / run);
    for (const auto& [name, source] : samples) fs::copy_file(kSource / source, dir / run / name);
  }
  const auto eval_args = [&](const char* run) {
    return std::vector<std::string>{"eval", "--problems", (kSource / "problems").string(), "--run",
                                    (dir / run).string(), "--level", "1", "--device", "cpu", "--trials", "1",
                                    "--timing", "off", "--seed", "7"};  // a fixed seed: the same inputs
  };
  SpawnOptions spawn_options;
  spawn_options.argv = {KBV_BINARY, "worker", "--queue", url};
  spawn_options.env_set["KBV_CACHE_DIR"] = KBV_TEST_CACHE;
  spawn_options.log_path = dir / "worker.log";
  spawn_options.protocol_pipes = false;
  std::string error;
  auto worker = spawn(spawn_options, error);
  ASSERT_TRUE(worker) << error;
  std::vector<std::string> queued_args = eval_args("queued");
  queued_args.insert(queued_args.end(), {"--queue", url});
  Outcome queued = run_kbv(queued_args, {}, 1500);
  ::kill(worker->pid, SIGTERM);
  if (!wait_for(worker->pid, std::chrono::seconds(60))) kill_group(worker->pid);
  ASSERT_EQ(queued.code, 0) << queued.output << "\n" << read_file(dir / "worker.log").text;
  EXPECT_NE(queued.output.find("4 sample(s) submitted"), std::string::npos) << queued.output;

  Outcome direct = run_kbv(eval_args("direct"), {}, 1500);
  ASSERT_EQ(direct.code, 0) << direct.output;
  const nlohmann::json from_queue = nlohmann::json::parse(read_file(dir / "queued" / "eval_results.json").text, nullptr, false);
  const nlohmann::json from_direct = nlohmann::json::parse(read_file(dir / "direct" / "eval_results.json").text, nullptr, false);
  ASSERT_TRUE(from_queue.is_object()) << read_file(dir / "queued" / "eval_results.json").text;
  ASSERT_EQ(from_queue.size(), 2u) << from_queue.dump(1);
  EXPECT_EQ(from_queue, from_direct) << from_queue.dump(1) << "\n" << from_direct.dump(1);
  EXPECT_EQ(from_queue["19"][0]["correctness"], true);
  EXPECT_EQ(from_queue["19"][1]["correctness"], false);

  // The same store keys as kbv eval --run's: a direct run over the queued folder has nothing left,
  // and so has the queued run again (nothing submitted).
  Outcome again = run_kbv(eval_args("queued"), {}, 600);
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("0 sample(s) to evaluate"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("4 already stored"), std::string::npos) << again.output;
  Outcome queued_again = run_kbv(queued_args, {}, 600);
  EXPECT_EQ(queued_again.code, 0) << queued_again.output;
  EXPECT_NE(queued_again.output.find("0 sample(s) submitted"), std::string::npos) << queued_again.output;

  // kbv report over the queue: the done jobs' records count as the run folder's samples (the
  // sample numbers, and so a best-of-n pick between tied samples, may differ: a job has none).
  Outcome from_q = run_kbv({"report", "--queue", url, "--format", "json", "--out", (dir / "queue.json").string()}, {}, 120);
  ASSERT_EQ(from_q.code, 0) << from_q.output;
  Outcome from_run = run_kbv({"report", (dir / "queued").string(), "--format", "json", "--out",
                              (dir / "run.json").string()}, {}, 120);
  ASSERT_EQ(from_run.code, 0) << from_run.output;
  const nlohmann::json rq = nlohmann::json::parse(read_file(dir / "queue.json").text, nullptr, false);
  const nlohmann::json rr = nlohmann::json::parse(read_file(dir / "run.json").text, nullptr, false);
  ASSERT_TRUE(rq.is_object() && rq.contains("runs") && rq["runs"].size() == 1u) << rq.dump(1).substr(0, 3000);
  const nlohmann::json& q1 = rq["runs"][0]["scopes"][0];
  const nlohmann::json& r1 = rr["runs"][0]["scopes"][0];
  EXPECT_EQ(q1["slots"], 4) << rq.dump(1).substr(0, 3000);
  for (const char* count : {"problems", "slots", "missing", "compiled"}) EXPECT_EQ(q1[count], r1[count]) << count;
  for (const char* gate : {"standard", "hidden"}) EXPECT_EQ(q1[gate]["correct"], r1[gate]["correct"]) << gate;
  EXPECT_EQ(q1["hidden"]["correct"], 2) << rq.dump(1).substr(0, 3000);
}

// The modification time and bytes of the one extension a cache built (cache/build/<key>/ext/**.so).
std::vector<std::pair<fs::path, fs::file_time_type>> built_extensions(const fs::path& cache) {
  std::vector<std::pair<fs::path, fs::file_time_type>> out;
  std::error_code ec;
  if (!fs::is_directory(cache / "build")) return out;
  for (auto it = fs::recursive_directory_iterator(cache / "build", ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().extension() == ".so") out.emplace_back(fs::relative(it->path(), cache), it->last_write_time());
  }
  return out;
}

TEST(Worker, BuildRoleCompilesAndEvalRoleEvaluatesWithTheQueuesBuild) {
  const fs::path dir = scratch_dir("worker", "roles");
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  std::string error;
  auto q = queue::Queue::open(url, error);
  ASSERT_NE(q, nullptr) << error;
  // Separate caches stand in for a CPU build host and a GPU host; the plain build (no precompiled
  // header wrapper, whose path is under the cache) keeps the two hosts' build commands the same.
  const nlohmann::json cpu = {{"device", "cpu"}, {"timing", "off"}, {"trials", 1}, {"fast_build", false}};
  auto honest = q->submit(spec_of("level1/19_ReLU", "problems/level1/19_ReLU.py",
                                  "examples/level1/19_ReLU/cpu_honest.py", cpu),
                          error);
  ASSERT_TRUE(honest) << error;
  auto broken = q->submit(spec_of("level1/19_ReLU", "problems/level1/19_ReLU.py",
                                  "examples/level1/19_ReLU/cpu_compile_error.py", cpu),
                          error);
  ASSERT_TRUE(broken) << error;
  const fs::path build_cache = dir / "build-host", eval_cache = dir / "gpu-host";

  // An eval worker alone finds nothing to do: both jobs wait for their build.
  Outcome idle = run_kbv({"worker", "--queue", url, "--role", "eval", "--drain"}, {}, 600, eval_cache.string());
  EXPECT_EQ(idle.code, 0) << idle.output;
  EXPECT_EQ(q->get(*honest, error)->state, queue::State::queued);

  Outcome build = run_kbv({"worker", "--queue", url, "--role", "build", "--drain"}, {}, 1500, build_cache.string());
  ASSERT_EQ(build.code, 0) << build.output;
  EXPECT_NE(build.output.find("1 build(s) put in the queue"), std::string::npos) << build.output;
  // The compile error is the build worker's to report: the job is done with kbv eval's record.
  auto failed = q->get(*broken, error);
  ASSERT_TRUE(failed) << error;
  ASSERT_EQ(failed->state, queue::State::done) << failed->error << "\n" << build.output;
  EXPECT_EQ(failed->record.value("verdict", ""), "compile_error") << failed->record.dump(2).substr(0, 2000);
  RecordRead read = record_from_json(failed->record);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(to_json(read.record), failed->record);
  // The honest one waits for an eval worker, its build in the queue.
  auto waiting = q->get(*honest, error);
  ASSERT_TRUE(waiting) << error;
  EXPECT_EQ(waiting->state, queue::State::queued);
  EXPECT_EQ(waiting->stage, queue::kStageEval);
  const auto built = built_extensions(build_cache);
  ASSERT_EQ(built.size(), 1u) << build.output;

  Outcome eval = run_kbv({"worker", "--queue", url, "--role", "eval", "--drain"}, {}, 1500, eval_cache.string());
  ASSERT_EQ(eval.code, 0) << eval.output;
  EXPECT_NE(eval.output.find("builds: 1 from the queue, 0 compiled here, 0 from the queue compiled again at load"), std::string::npos) << eval.output;
  auto job = q->get(*honest, error);
  ASSERT_TRUE(job) << error;
  ASSERT_EQ(job->state, queue::State::done) << job->error << "\n" << eval.output;
  EXPECT_EQ(job->record.value("verdict", ""), "correct") << job->record.dump(2).substr(0, 2000);
  EXPECT_EQ(job->record["build"].value("cached", false), true) << job->record["build"].dump();
  // The eval host never compiled: its extension is the build host's, its time the build's (a
  // rebuild by ninja at load would have written it anew).
  const auto fetched = built_extensions(eval_cache);
  ASSERT_EQ(fetched.size(), 1u) << eval.output;
  EXPECT_EQ(fetched[0].first, built[0].first);
  EXPECT_EQ(fetched[0].second, built[0].second) << "the extension was rebuilt on the eval host";
  EXPECT_EQ(read_file(eval_cache / fetched[0].first).text, read_file(build_cache / built[0].first).text);
}

TEST(Worker, AnUnusableQueueUrlIsAUsageError) {
  Outcome o = run_kbv({"worker", "--queue", "mysql://nowhere"}, {}, 60);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("mysql://nowhere"), std::string::npos) << o.output;
  Outcome g = run_kbv({"worker", "--queue", "sqlite:/tmp/x.db", "--gpus", "0,a"}, {}, 60);
  EXPECT_EQ(g.code, 2) << g.output;
  EXPECT_NE(g.output.find("'a' is not a GPU index"), std::string::npos) << g.output;
}

}  // namespace worker_test
}  // namespace kbv::e2e
