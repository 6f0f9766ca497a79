// The queue's reliability with real worker processes (tests/queue/queue_drainer.cc runs the
// library's worker loop with a stand-in executor), on SQLite and on PostgreSQL (a server of its
// own through tests/queue/with_postgres.sh; the PostgreSQL cases skip, saying why, without it):
// 1,000 jobs drained by 3 processes exactly once; `kill -9` of a worker mid-job, its child gone
// and its job completed by another after the lease expired; the database restarted under load.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "queue/queue.h"
#include "postgres_admin.h"
#include "util/subprocess.h"


namespace kbv::queue {
namespace reliability_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::pg_admin;
using test::with_database;

// Whether a process is gone (absent, or a zombie nobody reaped yet).
bool process_gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

class ReliabilityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string safe;
    for (char c : name) safe += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    dir_ = fs::temp_directory_path() / ("kbv_reliability_" + std::to_string(::getpid()) + "_" + safe);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (GetParam() == "sqlite") {
      url_ = "sqlite:" + (dir_ / "queue.db").string();
      return;
    }
    const char* server = std::getenv("KBV_TEST_POSTGRES_URL");
    if (!server || !*server) {
      GTEST_SKIP() << "PostgreSQL case skipped: KBV_TEST_POSTGRES_URL is not set (the CTest test "
                      "queue_postgres_reliability sets it through tests/queue/with_postgres.sh)";
    }
    server_ = server;
    pg_db_ = ("kbv_r_" + std::to_string(::getpid()) + "_" + safe).substr(0, 60);
    pg_admin(server_, "DROP DATABASE IF EXISTS " + pg_db_);
    ASSERT_EQ(pg_admin(server_, "CREATE DATABASE " + pg_db_), "");
    url_ = with_database(server_, pg_db_);
  }
  void TearDown() override {
    for (int pid : workers_) {
      if (!reaped_.count(pid) && !try_wait(pid)) kill_group(pid);
    }
    fs::remove_all(dir_);
    if (!pg_db_.empty()) pg_admin(server_, "DROP DATABASE IF EXISTS " + pg_db_ + " WITH (FORCE)");
  }

  std::unique_ptr<Queue> open() {
    std::string error;
    auto q = Queue::open(url_, error);
    EXPECT_NE(q, nullptr) << error;
    return q;
  }

  std::set<std::string> submit(Queue& q, int n) {
    std::set<std::string> ids;
    for (int i = 0; i < n; ++i) {
      JobSpec s;
      s.problem_name = "level1/" + std::to_string(i) + "_Job";
      s.problem_source = "problem " + std::to_string(i);
      s.solution_source = "solution";
      std::string error;
      auto id = q.submit(s, error);
      EXPECT_TRUE(id) << error;
      if (id) ids.insert(*id);
    }
    return ids;
  }

  // Starts a drainer process; its output goes to dir_/worker-N.log.
  int start_worker(const std::string& mode, int total, double lease_s) {
    SpawnOptions o;
    o.argv = {KBV_QUEUE_DRAINER, url_, (dir_ / "ran.txt").string(), mode, std::to_string(total),
              std::to_string(lease_s)};
    o.protocol_pipes = false;
    o.log_path = dir_ / ("worker-" + std::to_string(workers_.size()) + ".log");
    std::string error;
    auto child = spawn(o, error);
    EXPECT_TRUE(child) << error;
    if (!child) return -1;
    workers_.push_back(child->pid);
    return child->pid;
  }

  // Waits for every worker to exit on its own; false (and the logs) when one did not in time.
  bool wait_workers(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (reaped_.count(workers_[i])) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      auto status = wait_for(workers_[i], std::max(left, std::chrono::milliseconds(1)));
      if (!status) {
        ADD_FAILURE() << "worker " << i << " still running after " << timeout.count() << " s; log:\n"
                      << tail_file(dir_ / ("worker-" + std::to_string(i) + ".log"), 4000);
        return false;
      }
      reaped_.insert(workers_[i]);
      EXPECT_TRUE(status->exited && status->code == 0)
          << "worker " << i << " " << status->describe() << "; log:\n"
          << tail_file(dir_ / ("worker-" + std::to_string(i) + ".log"), 4000);
    }
    return true;
  }

  // "ran ID PID" lines: how often each job was run.
  std::map<std::string, int> runs() {
    std::map<std::string, int> count;
    std::ifstream in(dir_ / "ran.txt");
    std::string word, id, pid;
    while (in >> word) {
      if (word == "ran" && in >> id >> pid) ++count[id];
      if (word == "child") in >> pid;
    }
    return count;
  }

  std::vector<int> children() {
    std::vector<int> pids;
    std::ifstream in(dir_ / "ran.txt");
    std::string word, a, b;
    while (in >> word) {
      if (word == "ran") in >> a >> b;
      if (word == "child" && in >> a) pids.push_back(std::stoi(a));
    }
    return pids;
  }

  fs::path dir_;
  std::string url_, server_, pg_db_;
  std::vector<int> workers_;
  std::set<int> reaped_;
};

TEST_P(ReliabilityTest, ThousandJobsThreeWorkersEveryJobCompletedExactlyOnce) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const auto ids = submit(*q, 1000);
  ASSERT_EQ(ids.size(), 1000u);
  for (int i = 0; i < 3; ++i) start_worker("noop", 1000, 60);
  ASSERT_TRUE(wait_workers(600s));
  const auto ran = runs();
  EXPECT_EQ(ran.size(), 1000u);
  std::set<std::string> ran_ids;
  for (const auto& [id, n] : ran) {
    EXPECT_EQ(n, 1) << "job " << id << " ran " << n << " times";
    ran_ids.insert(id);
  }
  EXPECT_EQ(ran_ids, ids);
  std::string error;
  auto counts = q->counts(error);
  ASSERT_TRUE(counts) << error;
  EXPECT_EQ(counts->done, 1000);
  EXPECT_EQ(counts->queued + counts->running + counts->failed, 0);
  // The work was shared: every process took some (a lock that serialised everything on one
  // process would still pass the counts above).
  std::map<std::string, int> by_pid;
  for (const auto& id : ids) {
    auto job = q->get(id, error);
    ASSERT_TRUE(job) << error;
    EXPECT_EQ(job->attempts, 1);
    ++by_pid[job->record.value("ran_by", nlohmann::json()).dump()];
  }
  EXPECT_EQ(by_pid.size(), 3u);
}

TEST_P(ReliabilityTest, KilledWorkersJobIsLeasedAgainAfterItsLeaseAndItsChildDies) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const auto ids = submit(*q, 1);
  const double lease_s = 2.0;
  const int victim = start_worker("child:600000", 1, lease_s);
  ASSERT_GT(victim, 0);
  // Wait until it runs the job (its child started).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (children().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  const auto kids = children();
  ASSERT_EQ(kids.size(), 1u) << tail_file(dir_ / "worker-0.log", 4000);
  std::string error;
  EXPECT_EQ(q->get(*ids.begin(), error)->state, State::running);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_TRUE(wait_for(victim, 10000ms));
  reaped_.insert(victim);
  // Its child dies with it (PR_SET_PDEATHSIG from kbv's spawner).
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(kids[0]);
    if (!gone) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(gone) << "child " << kids[0] << " of the killed worker is still running";
  if (!gone) ::kill(kids[0], SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  start_worker("noop", 1, 30);
  ASSERT_TRUE(wait_workers(120s));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  auto job = q->get(*ids.begin(), error);
  ASSERT_TRUE(job) << error;
  EXPECT_EQ(job->state, State::done);
  EXPECT_EQ(job->attempts, 2);
  EXPECT_EQ(job->record["ran_by"], workers_[1]);
  EXPECT_GE(waited, lease_s * 0.5) << "leased again before the old lease could have expired";
}

TEST_P(ReliabilityTest, DatabaseRestartedUnderLoadLosesNothing) {
  if (GetParam() == "sqlite") {
    GTEST_SKIP() << "SQLite has no server to restart (the file outlives every process)";
  }
  const char* ctl = std::getenv("KBV_TEST_POSTGRES_CTL");
  const char* data = std::getenv("KBV_TEST_POSTGRES_DATA");
  if (!ctl || !data) GTEST_SKIP() << "KBV_TEST_POSTGRES_CTL/DATA not set (tests/queue/with_postgres.sh sets them)";
  auto q = open();
  ASSERT_NE(q, nullptr);
  constexpr int kJobs = 600;  // 600 x 20 ms over 3 workers: about 4 s of work
  const auto ids = submit(*q, kJobs);
  for (int i = 0; i < 3; ++i) start_worker("sleep:20", kJobs, 20);
  // Let them work, then restart the server under them.
  std::string error;
  std::optional<Counts> before;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    before = q->counts(error);
    ASSERT_TRUE(before) << error;
    if (before->done >= 30) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_LT(before->done, kJobs) << "the workers finished before the restart: make the jobs longer";
  const std::string restart = std::string(ctl) + " -D " + data + " -m fast -w restart >/dev/null 2>&1";
  ASSERT_EQ(std::system(restart.c_str()), 0) << restart;
  ASSERT_TRUE(wait_workers(600s));
  auto after = q->counts(error);  // this connection was dropped too: it reconnects
  ASSERT_TRUE(after) << error;
  EXPECT_EQ(after->done, kJobs);
  EXPECT_EQ(after->queued + after->running + after->failed, 0);
  const auto ran = runs();
  for (const auto& id : ids) EXPECT_GE(ran.count(id), 1u) << id;
  // What the workers saw of the restart (their LoopStats and warnings), for the log.
  for (size_t i = 0; i < workers_.size(); ++i) {
    std::cout << "worker " << i << ":\n" << tail_file(dir_ / ("worker-" + std::to_string(i) + ".log"), 600) << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, ReliabilityTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace reliability_test
}  // namespace kbv::queue
