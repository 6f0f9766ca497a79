// `kbv worker` end to end: jobs put in a SQLite queue through the library, evaluated by the kbv
// binary's worker, their records read back from the queue.
#include <gtest/gtest.h>

#include "support.h"
#include "queue/queue.h"
#include "record/record.h"

namespace kbv::e2e {
namespace {

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

TEST(Worker, AnUnusableQueueUrlIsAUsageError) {
  Outcome o = run_kbv({"worker", "--queue", "mysql://nowhere"}, {}, 60);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("mysql://nowhere"), std::string::npos) << o.output;
  Outcome g = run_kbv({"worker", "--queue", "sqlite:/tmp/x.db", "--gpus", "0,a"}, {}, 60);
  EXPECT_EQ(g.code, 2) << g.output;
  EXPECT_NE(g.output.find("'a' is not a GPU index"), std::string::npos) << g.output;
}

}  // namespace
}  // namespace kbv::e2e
