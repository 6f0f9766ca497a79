// The worker loop (src/queue/worker_loop.*) with injected executors, on a SQLite queue.
#include "queue/worker_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <thread>

namespace kbv::queue {
namespace worker_loop_test {

namespace fs = std::filesystem;

class WorkerLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kbv_loop_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    url_ = "sqlite:" + (dir_ / "queue.db").string();
    std::string error;
    queue_ = Queue::open(url_, error);
    ASSERT_NE(queue_, nullptr) << error;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> submit(int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      JobSpec s;
      s.problem_name = "level1/" + std::to_string(i) + "_X";
      s.problem_source = "problem " + std::to_string(i);
      s.solution_source = "solution";
      std::string error;
      auto id = queue_->submit(s, error);
      EXPECT_TRUE(id) << error;
      ids.push_back(id.value_or(""));
    }
    return ids;
  }

  Job get(const std::string& id) {
    std::string error;
    auto job = queue_->get(id, error);
    EXPECT_TRUE(job) << error;
    return job.value_or(Job{});
  }

  LoopOptions drain() {
    LoopOptions o;
    o.worker = "test-worker";
    o.until_empty = true;
    o.idle_seconds = 0.01;
    return o;
  }

  fs::path dir_;
  std::string url_;
  std::unique_ptr<Queue> queue_;
};

TEST_F(WorkerLoopTest, NoopExecutorDrainsEveryJobWithItsRecord) {
  auto ids = submit(20);
  int calls = 0;
  LoopStats stats = run_worker_loop(*queue_, [&](const Job& job) {
    ++calls;
    return ExecResult{ExecResult::Kind::done, {{"verdict", "correct"}, {"problem", job.spec.problem_name}}, ""};
  }, drain());
  EXPECT_EQ(calls, 20);
  EXPECT_EQ(stats.done, 20);
  EXPECT_EQ(stats.failed + stats.lost + stats.db_errors + stats.released, 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    Job job = get(ids[i]);
    EXPECT_EQ(job.state, State::done);
    EXPECT_EQ(job.record["problem"], "level1/" + std::to_string(i) + "_X");
    EXPECT_EQ(job.worker, "test-worker");
  }
}

TEST_F(WorkerLoopTest, AThrowingExecutorDoesNotStopTheWorkerAndTheJobIsRetried) {
  auto ids = submit(5);
  std::map<std::string, int> seen;
  LoopStats stats = run_worker_loop(*queue_, [&](const Job& job) -> ExecResult {
    if (seen[job.id]++ == 0 && job.id == ids[2]) throw std::runtime_error("segfault stand-in");
    return {ExecResult::Kind::done, {{"verdict", "correct"}}, ""};
  }, drain());
  EXPECT_EQ(stats.done, 5);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_EQ(seen[ids[2]], 2);
  for (const auto& id : ids) EXPECT_EQ(get(id).state, State::done) << id;
  EXPECT_EQ(get(ids[2]).attempts, 2);
}

TEST_F(WorkerLoopTest, AnExecutorThatAlwaysThrowsFailsTheJobAfterItsAttempts) {
  auto ids = submit(2);
  LoopStats stats = run_worker_loop(*queue_, [&](const Job& job) -> ExecResult {
    if (job.id == ids[0]) throw std::logic_error("always");
    return {ExecResult::Kind::done, {{"verdict", "correct"}}, ""};
  }, drain());
  EXPECT_EQ(stats.done, 1);
  EXPECT_EQ(stats.failed, kDefaultMaxAttempts);
  Job failed = get(ids[0]);
  EXPECT_EQ(failed.state, State::failed);
  EXPECT_NE(failed.error.find("the executor failed: always"), std::string::npos) << failed.error;
  EXPECT_EQ(get(ids[1]).state, State::done);
}

TEST_F(WorkerLoopTest, FailedResultEndsTheJobWithoutRetry) {
  auto ids = submit(1);
  LoopStats stats = run_worker_loop(*queue_, [&](const Job&) {
    return ExecResult{ExecResult::Kind::failed, {}, "options: --trials must be positive"};
  }, drain());
  EXPECT_EQ(stats.failed, 1);
  Job job = get(ids[0]);
  EXPECT_EQ(job.state, State::failed);
  EXPECT_EQ(job.attempts, 1);
  EXPECT_EQ(job.error, "options: --trials must be positive");
}

TEST_F(WorkerLoopTest, StoppingReleasesTheLeaseForAnotherWorker) {
  auto ids = submit(3);
  std::atomic<bool> stop{false};
  LoopOptions o = drain();
  o.stop = [&] { return stop.load(); };
  LoopStats stats = run_worker_loop(*queue_, [&](const Job&) {
    stop = true;  // SIGTERM arrives while the first job runs
    return ExecResult{ExecResult::Kind::interrupted, {}, ""};
  }, o);
  EXPECT_EQ(stats.released, 1);
  EXPECT_EQ(stats.done, 0);
  // Every job is queued again; the one that was running says who released it.
  int released = 0;
  for (const auto& id : ids) {
    Job job = get(id);
    EXPECT_EQ(job.state, State::queued) << id;
    if (job.attempts == 1) {
      ++released;
      EXPECT_NE(job.error.find("released by test-worker"), std::string::npos) << job.error;
    }
  }
  EXPECT_EQ(released, 1);
}

TEST_F(WorkerLoopTest, HeartbeatsKeepALongJobLeasedPastItsLease) {
  auto ids = submit(1);
  LoopOptions o = drain();
  o.lease_seconds = 0.3;
  o.heartbeat_seconds = 0.05;
  std::string leased_meanwhile = "not checked";
  LoopStats stats = run_worker_loop(*queue_, [&](const Job&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(900));  // 3 leases long
    std::string error;
    auto other = Queue::open(url_, error);
    auto l = other ? other->lease("intruder", 60, error) : std::nullopt;
    leased_meanwhile = l ? l->job_id : "";
    return ExecResult{ExecResult::Kind::done, {{"verdict", "correct"}}, ""};
  }, o);
  EXPECT_EQ(leased_meanwhile, "") << "the heartbeat should have kept the job leased";
  EXPECT_EQ(stats.done, 1);
  EXPECT_EQ(stats.lost, 0);
}

TEST_F(WorkerLoopTest, ALostLeaseDoesNotOverwriteTheNewOwnersRecord) {
  auto ids = submit(1);
  LoopStats stats = run_worker_loop(*queue_, [&](const Job&) {
    // While this worker evaluates, the job is taken from it (as when its lease expired) and
    // another worker leases and completes it: this worker's record must not replace that one.
    std::string error;
    auto other = Queue::open(url_, error);
    EXPECT_TRUE(other->fail(Lease{ids[0], "test-worker", 1}, "taken away", true, error)) << error;
    auto l = other->lease("thief", 60, error);
    EXPECT_TRUE(l) << error;
    if (l) {
      EXPECT_TRUE(other->complete(*l, {{"verdict", "by-thief"}}, error)) << error;
    }
    return ExecResult{ExecResult::Kind::done, {{"verdict", "stale"}}, ""};
  }, drain());
  EXPECT_EQ(stats.lost, 1);
  EXPECT_EQ(stats.done, 0);
  EXPECT_EQ(get(ids[0]).record["verdict"], "by-thief");
}

TEST_F(WorkerLoopTest, MaxJobsStopsTheLoop) {
  submit(5);
  LoopOptions o = drain();
  o.max_jobs = 2;
  LoopStats stats = run_worker_loop(*queue_, [&](const Job&) {
    return ExecResult{ExecResult::Kind::done, {{"verdict", "correct"}}, ""};
  }, o);
  EXPECT_EQ(stats.done, 2);
  std::string error;
  auto counts = queue_->counts(error);
  ASSERT_TRUE(counts) << error;
  EXPECT_EQ(counts->queued, 3);
}

// A queue whose first calls fail as a database that is restarting would.
class FlakyQueue final : public Queue {
 public:
  FlakyQueue(Queue& real, int lease_failures, int complete_failures)
      : real_(real), lease_failures_(lease_failures), complete_failures_(complete_failures) {}
  std::optional<std::string> submit(const JobSpec& s, std::string& e) override { return real_.submit(s, e); }
  std::optional<Job> get(const std::string& id, std::string& e) override { return real_.get(id, e); }
  std::optional<Lease> lease(const std::string& w, double s, std::string& e) override {
    if (lease_failures_-- > 0) {
      e = "server closed the connection unexpectedly";
      return std::nullopt;
    }
    return real_.lease(w, s, e);
  }
  std::optional<Job> job_of(const Lease& l, std::string& e) override { return real_.job_of(l, e); }
  bool heartbeat(const Lease& l, double s, std::string& e) override { return real_.heartbeat(l, s, e); }
  bool complete(const Lease& l, const nlohmann::json& r, std::string& e) override {
    if (complete_failures_-- > 0) {
      e = "connection refused";
      return false;
    }
    return real_.complete(l, r, e);
  }
  bool fail(const Lease& l, const std::string& w, bool r, std::string& e) override { return real_.fail(l, w, r, e); }
  std::optional<Counts> counts(std::string& e) override { return real_.counts(e); }
  bool put_blob(const std::string& s, const std::string& b, std::string& e) override { return real_.put_blob(s, b, e); }
  std::optional<std::string> get_blob(const std::string& s, std::string& e) override { return real_.get_blob(s, e); }
  std::string url() const override { return real_.url(); }

 private:
  Queue& real_;
  int lease_failures_, complete_failures_;
};

TEST_F(WorkerLoopTest, DatabaseFailuresAreRetriedAndTheRecordIsKept) {
  auto ids = submit(2);
  FlakyQueue flaky(*queue_, 3, 2);
  std::vector<std::string> warnings;
  LoopStats stats = run_worker_loop(flaky, [&](const Job&) {
    return ExecResult{ExecResult::Kind::done, {{"verdict", "correct"}}, ""};
  }, drain(), [&](const Notice& n) {
    if (n.kind == Notice::Kind::warning) warnings.push_back(n.text);
  });
  EXPECT_EQ(stats.done, 2);
  EXPECT_EQ(stats.db_errors, 5);
  EXPECT_EQ(get(ids[0]).state, State::done);
  EXPECT_EQ(get(ids[1]).state, State::done);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("server closed the connection unexpectedly"), std::string::npos) << warnings[0];
}

}  // namespace worker_loop_test
}  // namespace kbv::queue
