// The job queue (src/queue) on both engines: SQLite in a temporary folder, and PostgreSQL when
// KBV_TEST_POSTGRES_URL names a server (tests/queue/postgres_fixture.sh starts one on loopback for
// CTest; each test gets a database of its own). Without it the PostgreSQL cases skip, saying why.
#include "queue/queue.h"
#include "../queue/postgres_admin.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "util/hash.h"

namespace kbv::queue {
namespace queue_test {

namespace fs = std::filesystem;

using test::pg_admin;
using test::with_database;

class QueueTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string safe;
    for (char c : name) safe += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    if (GetParam() == "sqlite") {
      dir_ = fs::temp_directory_path() / ("kbv_queue_test_" + std::to_string(::getpid()) + "_" + safe);
      fs::remove_all(dir_);
      url_ = "sqlite:" + (dir_ / "queue.db").string();
      return;
    }
    const char* server = std::getenv("KBV_TEST_POSTGRES_URL");
    if (!server || !*server) {
      GTEST_SKIP() << "PostgreSQL case skipped: KBV_TEST_POSTGRES_URL is not set (CTest sets it through "
                      "tests/queue/postgres_fixture.sh when initdb and pg_ctl are installed)";
    }
#ifndef KBV_HAVE_LIBPQ
    GTEST_SKIP() << "PostgreSQL case skipped: kbv was built without libpq (install libpq-dev)";
#endif
    pg_db_ = "kbv_t_" + std::to_string(::getpid()) + "_" + safe;
    if (pg_db_.size() > 60) pg_db_ = pg_db_.substr(0, 60);
    pg_admin(server, "DROP DATABASE IF EXISTS " + pg_db_);
    const std::string why = pg_admin(server, "CREATE DATABASE " + pg_db_);
    ASSERT_EQ(why, "") << "cannot create a test database on " << server;
    server_ = server;
    url_ = with_database(server, pg_db_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
    if (!pg_db_.empty()) pg_admin(server_, "DROP DATABASE IF EXISTS " + pg_db_ + " WITH (FORCE)");
  }

  std::unique_ptr<Queue> open() {
    std::string error;
    auto q = Queue::open(url_, error);
    EXPECT_NE(q, nullptr) << error;
    EXPECT_EQ(error, "");
    return q;
  }

  static JobSpec spec(int n) {
    JobSpec s;
    s.problem_name = "level1/" + std::to_string(n) + "_Test";
    s.problem_source = "class Model: pass  # " + std::to_string(n);
    s.solution_source = "class ModelNew: pass";
    s.options = {{"device", "cpu"}, {"trials", 1}};
    return s;
  }

  std::string submit(Queue& q, const JobSpec& s) {
    std::string error;
    auto id = q.submit(s, error);
    EXPECT_TRUE(id.has_value()) << error;
    return id.value_or("");
  }

  Lease lease(Queue& q, const std::string& worker = "w1", double seconds = 60) {
    std::string error;
    auto l = q.lease(worker, seconds, error);
    EXPECT_TRUE(l.has_value()) << "nothing leased; error: " << error;
    return l.value_or(Lease{});
  }

  Job get(Queue& q, const std::string& id) {
    std::string error;
    auto job = q.get(id, error);
    EXPECT_TRUE(job.has_value()) << error;
    return job.value_or(Job{});
  }

  fs::path dir_;
  std::string url_, server_, pg_db_;
};

TEST_P(QueueTest, SubmitThenGetGivesTheSpecBackQueued) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  JobSpec s = spec(1);
  s.solution_source = "```python\nclass ModelNew: pass\n```\n'quotes' \"and\" $1 ?2 \\ unicode: é";
  const std::string id = submit(*q, s);
  EXPECT_EQ(id.size(), 32u);
  Job job = get(*q, id);
  EXPECT_EQ(job.id, id);
  EXPECT_EQ(job.state, State::queued);
  EXPECT_EQ(job.spec.problem_name, s.problem_name);
  EXPECT_EQ(job.spec.problem_source, s.problem_source);
  EXPECT_EQ(job.spec.solution_source, s.solution_source);
  EXPECT_EQ(job.spec.options, s.options);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_EQ(job.max_attempts, kDefaultMaxAttempts);
  EXPECT_TRUE(job.record.is_null());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(job.created_at, now, 60.0);
  EXPECT_GE(job.updated_at, job.created_at);
}

TEST_P(QueueTest, UnknownJobIsNulloptWithoutError) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  std::string error;
  EXPECT_FALSE(q->get("0123456789abcdef0123456789abcdef", error).has_value());
  EXPECT_EQ(error, "");
}

TEST_P(QueueTest, LeasesOldestFirstAndEachJobOnce) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(submit(*q, spec(i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct created_at
  }
  std::vector<std::string> leased;
  for (int i = 0; i < 3; ++i) leased.push_back(lease(*q, "w" + std::to_string(i)).job_id);
  EXPECT_EQ(leased, ids);
  std::string error;
  EXPECT_FALSE(q->lease("w9", 60, error).has_value());
  EXPECT_EQ(error, "");
  Job job = get(*q, ids[1]);
  EXPECT_EQ(job.state, State::running);
  EXPECT_EQ(job.worker, "w1");
  EXPECT_EQ(job.attempts, 1);
}

TEST_P(QueueTest, CompleteStoresTheRecordAndEndsTheJob) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string id = submit(*q, spec(1));
  Lease l = lease(*q);
  std::string error;
  auto job = q->job_of(l, error);
  ASSERT_TRUE(job.has_value()) << error;
  EXPECT_EQ(job->id, id);
  EXPECT_EQ(job->spec.problem_source, spec(1).problem_source);
  const nlohmann::json record = {{"verdict", "correct"}, {"speedup", 1.5}, {"findings", nlohmann::json::array()}};
  ASSERT_TRUE(q->complete(l, record, error)) << error;
  Job done = get(*q, id);
  EXPECT_EQ(done.state, State::done);
  EXPECT_EQ(done.record, record);
  EXPECT_FALSE(q->lease("w2", 60, error).has_value());
  EXPECT_EQ(error, "");
  auto counts = q->counts(error);
  ASSERT_TRUE(counts.has_value()) << error;
  EXPECT_EQ(counts->done, 1);
  EXPECT_EQ(counts->queued + counts->running + counts->failed, 0);
}

TEST_P(QueueTest, DoneJobsListsOnlyDoneJobsWithTheirRecordsInTheOrderTheyWereDone) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  std::string error;
  auto none = q->done_jobs(error);
  ASSERT_TRUE(none.has_value()) << error;
  EXPECT_TRUE(none->empty());
  std::set<std::string> submitted = {submit(*q, spec(1)), submit(*q, spec(2)), submit(*q, spec(3))};
  // Jobs submitted in the same millisecond are leased in id order: which lease holds which job is
  // read from the lease.
  Lease first = lease(*q), second = lease(*q), third = lease(*q);
  EXPECT_EQ(submitted, (std::set<std::string>{first.job_id, second.job_id, third.job_id}));
  ASSERT_TRUE(q->complete(second, {{"verdict", "correct"}, {"n", 2}}, error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the database clock's milliseconds apart
  ASSERT_TRUE(q->complete(first, {{"verdict", "wrong_output"}, {"n", 1}}, error)) << error;
  ASSERT_TRUE(q->fail(third, "refused", false, error)) << error;
  submit(*q, spec(4));  // queued
  auto done = q->done_jobs(error);
  ASSERT_TRUE(done.has_value()) << error;
  ASSERT_EQ(done->size(), 2u);
  EXPECT_EQ((*done)[0].id, second.job_id);
  EXPECT_EQ((*done)[0].record["n"], 2);
  EXPECT_EQ((*done)[0].state, State::done);
  EXPECT_EQ((*done)[1].id, first.job_id);
  EXPECT_EQ((*done)[1].spec.problem_name, get(*q, first.job_id).spec.problem_name);
  EXPECT_EQ((*done)[1].record["verdict"], "wrong_output");
}

TEST_P(QueueTest, SameKeyDoneIsAnsweredWithoutQueueing) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string first = submit(*q, spec(1));
  // Not done yet: a second submission is a job of its own.
  const std::string second = submit(*q, spec(1));
  EXPECT_NE(first, second);
  Lease l = lease(*q);
  std::string error;
  ASSERT_TRUE(q->complete(l, {{"verdict", "correct"}}, error)) << error;
  EXPECT_EQ(submit(*q, spec(1)), l.job_id);
  JobSpec other_options = spec(1);
  other_options.options["trials"] = 2;
  EXPECT_NE(submit(*q, other_options), l.job_id);
}

TEST(QueueKey, DependsOnSourcesAndOptionsNotOnKeyOrderOrName) {
  JobSpec a;
  a.problem_source = "p";
  a.solution_source = "s";
  a.options = nlohmann::json::parse(R"({"device":"cpu","trials":3})");
  JobSpec b = a;
  b.options = nlohmann::json::parse(R"({"trials":3,"device":"cpu"})");
  b.problem_name = "level1/1_X";
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.key().size(), 64u);
  JobSpec c = a;
  c.options["trials"] = 4;
  EXPECT_NE(a.key(), c.key());
  JobSpec d = a;
  d.problem_source = "ps";
  d.solution_source = "";
  JobSpec e = a;
  e.problem_source = "p";
  e.solution_source = "s";
  EXPECT_NE(d.key(), e.key());
}

TEST_P(QueueTest, ExpiredLeaseIsLeasedAgainAndTheStaleTokenIsFenced) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string id = submit(*q, spec(1));
  Lease stale = lease(*q, "dead", 0.2);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  Lease fresh = lease(*q, "alive", 60);
  EXPECT_EQ(fresh.job_id, id);
  EXPECT_GT(fresh.token, stale.token);
  std::string error;
  EXPECT_FALSE(q->heartbeat(stale, 60, error));
  EXPECT_EQ(error, "") << "a lost lease is not a database error";
  EXPECT_FALSE(q->complete(stale, {{"verdict", "stale"}}, error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(q->fail(stale, "stale", false, error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(q->job_of(stale, error).has_value());
  EXPECT_EQ(error, "");
  EXPECT_TRUE(q->heartbeat(fresh, 60, error)) << error;
  ASSERT_TRUE(q->complete(fresh, {{"verdict", "correct"}}, error)) << error;
  Job job = get(*q, id);
  EXPECT_EQ(job.state, State::done);
  EXPECT_EQ(job.record["verdict"], "correct");
  EXPECT_EQ(job.worker, "alive");
  EXPECT_EQ(job.attempts, 2);
}

TEST_P(QueueTest, HeartbeatKeepsALeaseAlive) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  submit(*q, spec(1));
  Lease l = lease(*q, "w1", 0.5);
  std::string error;
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(q->heartbeat(l, 0.5, error)) << "beat " << i << ": " << error;
  }
  // 800 ms after the lease began, longer than the lease: still held thanks to the heartbeats.
  EXPECT_FALSE(q->lease("w2", 60, error).has_value());
  EXPECT_EQ(error, "");
  EXPECT_TRUE(q->complete(l, {{"verdict", "correct"}}, error)) << error;
}

TEST_P(QueueTest, AttemptsAreBoundedThenTheJobFails) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string id = submit(*q, spec(1));
  std::string error;
  for (int attempt = 1; attempt <= kDefaultMaxAttempts; ++attempt) {
    auto l = q->lease("crashy", 0.1, error);
    ASSERT_TRUE(l.has_value()) << "attempt " << attempt << ": " << error;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_FALSE(q->lease("w", 60, error).has_value());
  EXPECT_EQ(error, "");
  Job job = get(*q, id);
  EXPECT_EQ(job.state, State::failed);
  EXPECT_EQ(job.attempts, kDefaultMaxAttempts);
  EXPECT_NE(job.error.find("attempt 3 of 3"), std::string::npos) << job.error;
  EXPECT_NE(job.error.find("crashy"), std::string::npos) << job.error;
}

TEST_P(QueueTest, FailWithRetryRequeuesUntilAttemptsRunOut) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string id = submit(*q, spec(1));
  std::string error;
  for (int attempt = 1; attempt <= kDefaultMaxAttempts; ++attempt) {
    Lease l = lease(*q);
    ASSERT_TRUE(q->fail(l, "executor crashed, attempt " + std::to_string(attempt), true, error)) << error;
    Job job = get(*q, id);
    EXPECT_EQ(job.state, attempt < kDefaultMaxAttempts ? State::queued : State::failed) << attempt;
  }
  EXPECT_EQ(get(*q, id).error, "executor crashed, attempt 3");
  EXPECT_FALSE(q->lease("w", 60, error).has_value());
}

TEST_P(QueueTest, FailWithoutRetryEndsTheJobAtOnce) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string id = submit(*q, spec(1));
  Lease l = lease(*q);
  std::string error;
  ASSERT_TRUE(q->fail(l, "problem does not parse", false, error)) << error;
  Job job = get(*q, id);
  EXPECT_EQ(job.state, State::failed);
  EXPECT_EQ(job.error, "problem does not parse");
  auto counts = q->counts(error);
  ASSERT_TRUE(counts.has_value()) << error;
  EXPECT_EQ(counts->failed, 1);
}

TEST_P(QueueTest, BlobsAreContentAddressed) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  std::string bytes("ELF\0\x01\x02\xff binary", 15);
  const std::string sha = sha256_hex(bytes);
  std::string error;
  ASSERT_TRUE(q->put_blob(sha, bytes, error)) << error;
  ASSERT_TRUE(q->put_blob(sha, bytes, error)) << "storing twice is a no-op: " << error;
  auto back = q->get_blob(sha, error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, bytes);
  EXPECT_FALSE(q->put_blob(sha256_hex("other"), bytes, error));
  EXPECT_NE(error.find("hash to " + sha), std::string::npos) << error;
  EXPECT_FALSE(q->put_blob("../etc/passwd", bytes, error));
  EXPECT_NE(error.find("not a sha256"), std::string::npos) << error;
  EXPECT_FALSE(q->get_blob(sha256_hex("absent"), error).has_value());
  EXPECT_EQ(error, "");
}

TEST_P(QueueTest, BuildStageLeasesOnlyBuildJobsAndHandsThemToEval) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string a = submit(*q, spec(1));
  std::string error;
  EXPECT_EQ(get(*q, a).stage, kStageBuild) << "every job starts in the build stage";
  // An eval worker finds nothing while the job waits for its build.
  EXPECT_FALSE(q->lease_stage("eval", 60, kStageEval, error).has_value());
  EXPECT_EQ(error, "");
  auto built = q->lease_stage("builder", 60, kStageBuild, error);
  ASSERT_TRUE(built.has_value()) << error;
  EXPECT_EQ(built->job_id, a);
  ASSERT_TRUE(q->to_eval(*built, error)) << error;
  Job job = get(*q, a);
  EXPECT_EQ(job.state, State::queued);
  EXPECT_EQ(job.stage, kStageEval);
  EXPECT_EQ(job.attempts, 0) << "the evaluation gets its own attempts";
  EXPECT_FALSE(q->lease_stage("builder", 60, kStageBuild, error).has_value()) << "built once";
  EXPECT_EQ(error, "");
  // The same to_eval again (a retry after a dropped connection hid the answer) is recognised.
  EXPECT_TRUE(q->to_eval(*built, error)) << error;
  EXPECT_EQ(get(*q, a).stage, kStageEval);
  auto evaluating = q->lease_stage("eval", 60, kStageEval, error);
  ASSERT_TRUE(evaluating.has_value()) << error;
  EXPECT_EQ(evaluating->job_id, a);
  EXPECT_GT(evaluating->token, built->token);
  // Once an eval worker holds it, the build worker's stale lease can no longer move it.
  EXPECT_FALSE(q->to_eval(*built, error));
  EXPECT_EQ(error, "") << "a lost lease, not a database error";
  EXPECT_EQ(get(*q, a).state, State::running);
  ASSERT_TRUE(q->complete(*evaluating, {{"verdict", "correct"}}, error)) << error;
  EXPECT_EQ(get(*q, a).state, State::done);
  EXPECT_FALSE(q->lease_stage("x", 60, "compile", error).has_value());
  EXPECT_NE(error.find("unknown stage"), std::string::npos) << error;
}

TEST_P(QueueTest, AnyStageIsLeasedByAnAllRoleWorker) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string a = submit(*q, spec(1));
  const std::string b = submit(*q, spec(2));
  std::string error;
  auto first = q->lease_stage("builder", 60, kStageBuild, error);
  ASSERT_TRUE(first.has_value()) << error;
  ASSERT_TRUE(q->to_eval(*first, error)) << error;
  // lease() (kbv worker --role all) takes queued jobs whatever their stage.
  std::set<std::string> leased = {lease(*q, "all").job_id, lease(*q, "all").job_id};
  EXPECT_EQ(leased, (std::set<std::string>{a, b}));
}

TEST_P(QueueTest, BuildsAreRecordedByKeyOnce) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  const std::string key = sha256_hex("build key"), blob = sha256_hex("blob 1"), other = sha256_hex("blob 2");
  std::string error;
  EXPECT_FALSE(q->get_build(key, error).has_value());
  EXPECT_EQ(error, "");
  ASSERT_TRUE(q->put_build(key, blob, error)) << error;
  ASSERT_TRUE(q->put_build(key, other, error)) << "a second put is a no-op: " << error;
  auto back = q->get_build(key, error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, blob) << "the first build of a key stays";
  EXPECT_FALSE(q->put_build("../x", blob, error));
  EXPECT_NE(error.find("not a sha256"), std::string::npos) << error;
}

TEST_P(QueueTest, ReopenedQueueKeepsItsJobs) {
  std::string id;
  {
    auto q = open();
    ASSERT_NE(q, nullptr);
    id = submit(*q, spec(1));
  }
  auto q = open();
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(get(*q, id).state, State::queued);
  EXPECT_EQ(lease(*q).job_id, id);
}

TEST_P(QueueTest, ConcurrentLeasersTakeEveryJobExactlyOnce) {
  auto q = open();
  ASSERT_NE(q, nullptr);
  constexpr int kJobs = 120;
  std::set<std::string> submitted;
  for (int i = 0; i < kJobs; ++i) submitted.insert(submit(*q, spec(i)));
  std::vector<std::vector<std::string>> taken(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::string error;
      auto mine = Queue::open(url_, error);
      if (!mine) {
        errors[t] = error;
        return;
      }
      while (true) {
        auto l = mine->lease("t" + std::to_string(t), 60, error);
        if (!l) {
          if (!error.empty()) errors[t] = error;
          return;
        }
        if (!mine->complete(*l, {{"by", t}}, error)) {
          errors[t] = "complete failed: " + error;
          return;
        }
        taken[t].push_back(l->job_id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::multiset<std::string> all;
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    all.insert(taken[t].begin(), taken[t].end());
  }
  EXPECT_EQ(all.size(), submitted.size());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()), submitted);
  std::string error;
  auto counts = q->counts(error);
  ASSERT_TRUE(counts.has_value()) << error;
  EXPECT_EQ(counts->done, kJobs);
}

// A queue made by a kbv of schema version 1 (its tables exactly as that kbv created them: no stage
// column, no build table), holding a queued, a running and a done job, is upgraded in place when a
// newer kbv opens it: every job keeps its state, spec, attempts, lease and record, the queued one
// is leased in the build stage, the done one still answers its key, none carries a sample id
// (version 3's column). Both engines (the SQLite upgrade is also tested from a downgraded file below).
TEST_P(QueueTest, VersionOneSchemaIsUpgradedInPlaceKeepingEveryJob) {
  const std::string v1_schema = R"sql(
CREATE TABLE kbv_queue_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE kbv_jobs (
  id TEXT PRIMARY KEY,
  job_key TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
  problem_name TEXT NOT NULL,
  problem_source TEXT NOT NULL,
  solution_source TEXT NOT NULL,
  options TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 3,
  worker TEXT NOT NULL DEFAULT '',
  token BIGINT NOT NULL DEFAULT 0,
  lease_expires_at {real},
  record TEXT,
  error TEXT NOT NULL DEFAULT '',
  created_at {real} NOT NULL,
  updated_at {real} NOT NULL
);
CREATE INDEX kbv_jobs_by_key ON kbv_jobs (job_key, state);
CREATE INDEX kbv_jobs_by_state ON kbv_jobs (state, created_at, id);
CREATE TABLE kbv_blobs (sha256 TEXT PRIMARY KEY, bytes {blob} NOT NULL, size BIGINT NOT NULL, created_at {real} NOT NULL);
INSERT INTO kbv_queue_meta (name, value) VALUES ('schema_version', '1');
)sql";
  const JobSpec queued = spec(1), running = spec(2), done = spec(3);
  const double far = 4102444800.0;  // 2100-01-01: the running job's lease has not expired
  auto row = [](const std::string& id, const JobSpec& s, const std::string& state, int attempts,
                const std::string& worker, long long token, const std::string& lease_expires,
                const std::string& record, double created) {
    auto quoted = [](const std::string& text) {
      std::string out = "'";
      for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
      return out + "'";
    };
    return "INSERT INTO kbv_jobs (id, job_key, state, problem_name, problem_source, solution_source, options, "
           "attempts, max_attempts, worker, token, lease_expires_at, record, error, created_at, updated_at) VALUES (" +
           quoted(id) + ", " + quoted(s.key()) + ", " + quoted(state) + ", " + quoted(s.problem_name) + ", " +
           quoted(s.problem_source) + ", " + quoted(s.solution_source) + ", " + quoted(s.options.dump()) + ", " +
           std::to_string(attempts) + ", 3, " + quoted(worker) + ", " + std::to_string(token) + ", " + lease_expires +
           ", " + record + ", '', " + std::to_string(created) + ", " + std::to_string(created) + ");";
  };
  const std::string id_queued(32, 'a'), id_running(32, 'b'), id_done(32, 'c');
  const nlohmann::json record = {{"verdict", "correct"}, {"message", "passed 5 of 5 checks"}};
  std::string sql = v1_schema + row(id_queued, queued, "queued", 0, "", 0, "NULL", "NULL", 1700000002.0) +
                    row(id_running, running, "running", 1, "old-host:1", 7, std::to_string(far), "NULL", 1700000001.0) +
                    row(id_done, done, "done", 1, "old-host:1", 3, "NULL", "'" + record.dump() + "'", 1700000000.0);
  const bool sqlite = GetParam() == "sqlite";
  const auto replace = [](std::string text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
    return text;
  };
  sql = replace(replace(sql, "{real}", sqlite ? "REAL" : "DOUBLE PRECISION"), "{blob}", sqlite ? "BLOB" : "BYTEA");
  if (sqlite) {
    fs::create_directories(dir_);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "queue.db").c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string why = message ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << why;
  } else {
    ASSERT_EQ(pg_admin(url_, sql), "");
  }

  auto q = open();  // upgrades
  ASSERT_NE(q, nullptr);
  std::string error;
  Job a = get(*q, id_queued), b = get(*q, id_running), c = get(*q, id_done);
  EXPECT_EQ(a.state, State::queued);
  EXPECT_EQ(a.stage, kStageBuild);
  EXPECT_EQ(a.spec.problem_source, queued.problem_source);
  EXPECT_EQ(a.spec.options, queued.options);
  EXPECT_FALSE(a.spec.sample_id.has_value());
  EXPECT_EQ(b.state, State::running);
  EXPECT_EQ(b.attempts, 1);
  EXPECT_EQ(b.worker, "old-host:1");
  EXPECT_EQ(c.state, State::done);
  EXPECT_EQ(c.record, record);
  // The old worker's lease still holds (its fencing token kept): it completes its job.
  EXPECT_TRUE(q->complete(Lease{id_running, "old-host:1", 7}, record, error)) << error;
  EXPECT_EQ(get(*q, id_running).state, State::done);
  // The queued job is leased, in the build stage; the build table is there.
  auto leased = q->lease_stage("w", 60, kStageBuild, error);
  ASSERT_TRUE(leased) << error;
  EXPECT_EQ(leased->job_id, id_queued);
  EXPECT_TRUE(q->put_build(sha256_hex("k"), sha256_hex("b"), error)) << error;
  // The done job answers its key: submitting it again queues nothing.
  auto again = q->submit(done, error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(*again, id_done);
  auto jobs = q->done_jobs(error);
  ASSERT_TRUE(jobs) << error;
  EXPECT_EQ(jobs->size(), 2u);
  // Opened again: already version 2, nothing changes.
  q.reset();
  q = open();
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(get(*q, id_done).record, record);
}

INSTANTIATE_TEST_SUITE_P(Engines, QueueTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

TEST(QueueOpen, RefusesUrlsItDoesNotKnowNamingTheUrl) {
  std::string error;
  EXPECT_EQ(Queue::open("mysql://x", error), nullptr);
  EXPECT_NE(error.find("mysql://x"), std::string::npos) << error;
  EXPECT_NE(error.find("sqlite:"), std::string::npos) << error;
  EXPECT_EQ(Queue::open("sqlite:", error), nullptr);
  EXPECT_NE(error.find("names no file"), std::string::npos) << error;
}

TEST(QueueOpen, SqliteFileThatIsNotADatabaseIsAnError) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_queue_bad_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::FILE* f = std::fopen((dir / "q.db").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a database, it is a text file long enough to have a header..........", f);
    std::fclose(f);
  }
  std::string error;
  EXPECT_EQ(Queue::open("sqlite:" + (dir / "q.db").string(), error), nullptr);
  EXPECT_NE(error.find((dir / "q.db").string()), std::string::npos) << error;
  fs::remove_all(dir);
}

// Processes that open the same new SQLite queue at once all get it (the CI failure of
// Worker.EvalWithQueueSubmitsThePairAndWritesTheWorkersRecord: `kbv eval --queue` and the `kbv
// worker` beside it opened a new file together and the worker stopped on "database is locked",
// from setting WAL, which SQLite answers at once rather than waiting when both hold the shared lock).
TEST(QueueOpen, ProcessesOpeningANewSqliteQueueTogetherAllGetIt) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_queue_race_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  constexpr int kRounds = 12, kProcs = 4;
  int failed = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string url = "sqlite:" + (dir / ("q" + std::to_string(round) + ".db")).string();
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> kids;
    for (int k = 0; k < kProcs; ++k) {
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(go[1]);
        char c;
        (void)!::read(go[0], &c, 1);  // all start when the parent closes its end
        std::string error;
        auto q = Queue::open(url, error);
        if (!q) std::fprintf(stderr, "%s\n", error.c_str());
        ::_exit(q ? 0 : 1);
      }
      kids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    for (pid_t pid : kids) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << kRounds * kProcs << " opens failed (their messages are on stderr)";
  fs::remove_all(dir);
}

TEST(QueueOpen, VersionOneQueueIsUpgradedKeepingItsJobs) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_queue_v1_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string url = "sqlite:" + (dir / "q.db").string();
  std::string error, id;
  {
    auto q = Queue::open(url, error);
    ASSERT_NE(q, nullptr) << error;
    JobSpec s;
    s.problem_source = "class Model: pass";
    s.solution_source = "class ModelNew: pass";
    auto submitted = q->submit(s, error);
    ASSERT_TRUE(submitted) << error;
    id = *submitted;
  }
  // Back to version 1's shape: no stage column, no build table.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "q.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP INDEX kbv_jobs_by_stage; ALTER TABLE kbv_jobs DROP COLUMN stage; DROP TABLE kbv_builds; "
                         "ALTER TABLE kbv_jobs DROP COLUMN sample_id; "
                         "UPDATE kbv_queue_meta SET value = '1' WHERE name = 'schema_version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto q = Queue::open(url, error);
  ASSERT_NE(q, nullptr) << error;
  auto job = q->get(id, error);
  ASSERT_TRUE(job) << error;
  EXPECT_EQ(job->state, State::queued);
  EXPECT_EQ(job->stage, kStageBuild);
  EXPECT_TRUE(q->put_build(sha256_hex("k"), sha256_hex("b"), error)) << error;
  auto leased = q->lease_stage("w", 60, kStageBuild, error);
  ASSERT_TRUE(leased) << error;
  EXPECT_EQ(leased->job_id, id);
  fs::remove_all(dir);
}

TEST(QueueOpen, NewerSchemaIsRefused) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_queue_newer_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string url = "sqlite:" + (dir / "q.db").string();
  std::string error;
  ASSERT_NE(Queue::open(url, error), nullptr) << error;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "q.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE kbv_queue_meta SET value = '99' WHERE name = 'schema_version'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(Queue::open(url, error), nullptr);
  EXPECT_NE(error.find("schema version is 99"), std::string::npos) << error;
  fs::remove_all(dir);
}

TEST(QueueOpen, UnreachablePostgresNamesTheUrl) {
  std::string error;
  // Port 1 on loopback: nothing listens there.
  EXPECT_EQ(Queue::open("postgresql://kbv@127.0.0.1:1/kbv?connect_timeout=2", error), nullptr);
  EXPECT_NE(error.find("127.0.0.1:1"), std::string::npos) << error;
}

}  // namespace queue_test
}  // namespace kbv::queue

namespace kbv::queue {
namespace queue_test {

TEST(QueueUrl, PasswordsAreHiddenInMessages) {
  EXPECT_EQ(redact_url("postgresql://kbv:s3cret@db:5432/kbv"), "postgresql://kbv:***@db:5432/kbv");
  EXPECT_EQ(redact_url("postgresql://db/kbv?user=kbv&password=s3cret&sslmode=require"),
            "postgresql://db/kbv?user=kbv&password=***&sslmode=require");
  EXPECT_EQ(redact_url("postgresql://kbv@db/kbv"), "postgresql://kbv@db/kbv");
  EXPECT_EQ(redact_url("sqlite:/tmp/q.db"), "sqlite:/tmp/q.db");
  std::string error;
  EXPECT_EQ(Queue::open("postgresql://kbv:s3cret@127.0.0.1:1/kbv?connect_timeout=2", error), nullptr);
  EXPECT_EQ(error.find("s3cret"), std::string::npos) << error;
  EXPECT_NE(error.find("kbv:***@127.0.0.1:1"), std::string::npos) << error;
}

}  // namespace queue_test
}  // namespace kbv::queue
