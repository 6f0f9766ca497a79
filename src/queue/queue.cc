// The queue's logic, written once over a Connection (db.h); the engines differ only in how they
// run a statement. Every state change is one UPDATE guarded by (id, token, state), so a stale
// lease changes nothing, and complete() stores the record in the statement that ends the job.
#include "queue/queue.h"

#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "queue/db.h"
#include "util/hash.h"

namespace kbv::queue {

const char* const kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS kbv_queue_meta (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kbv_jobs (
  id TEXT PRIMARY KEY,
  job_key TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
  stage TEXT NOT NULL DEFAULT 'build',
  sample_id INTEGER,
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
CREATE INDEX IF NOT EXISTS kbv_jobs_by_key ON kbv_jobs (job_key, state);
CREATE INDEX IF NOT EXISTS kbv_jobs_by_state ON kbv_jobs (state, created_at, id);
CREATE TABLE IF NOT EXISTS kbv_blobs (
  sha256 TEXT PRIMARY KEY,
  bytes {blob} NOT NULL,
  size BIGINT NOT NULL,
  created_at {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS kbv_builds (
  build_key TEXT PRIMARY KEY,
  blob TEXT NOT NULL,
  created_at {real} NOT NULL
);
)sql";

const char* const kMigrateV1Sql = "ALTER TABLE kbv_jobs ADD COLUMN stage TEXT NOT NULL DEFAULT 'build';";
const char* const kMigrateV2Sql = "ALTER TABLE kbv_jobs ADD COLUMN sample_id INTEGER;";
const char* const kSchemaV2Sql =
    "CREATE INDEX IF NOT EXISTS kbv_jobs_by_stage ON kbv_jobs (state, stage, created_at, id);";

namespace {

constexpr const char* kJobColumns =
    "id, state, problem_name, problem_source, solution_source, options, attempts, max_attempts, "
    "worker, record, error, created_at, updated_at, stage, sample_id";

// A lease that ran out goes back to the queue, or fails once its attempts are spent.
constexpr const char* kRequeueExpired =
    "UPDATE kbv_jobs SET "
    "state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END, "
    "error = CASE WHEN attempts >= max_attempts THEN "
    "  'lease expired without a heartbeat on attempt ' || attempts || ' of ' || max_attempts || "
    "  ' (last worker ' || worker || ')' ELSE error END, "
    "lease_expires_at = NULL, updated_at = {now} "
    "WHERE state = 'running' AND lease_expires_at < {now}";
constexpr const char* kLease =
    "UPDATE kbv_jobs SET state = 'running', attempts = attempts + 1, token = token + 1, worker = $1, "
    "lease_expires_at = {now} + CAST($2 AS DOUBLE PRECISION), updated_at = {now} "
    "WHERE state = 'queued' AND id = (SELECT id FROM kbv_jobs WHERE state = 'queued' "
    "AND (CAST($3 AS TEXT) = '' OR stage = CAST($3 AS TEXT)) ORDER BY created_at, id LIMIT 1{skip_locked}) "
    "RETURNING id, token";
constexpr const char* kToEval =
    "UPDATE kbv_jobs SET state = 'queued', stage = 'eval', attempts = 0, lease_expires_at = NULL, "
    "updated_at = {now} WHERE id = $1 AND token = CAST($2 AS BIGINT) AND state = 'running'";
constexpr const char* kStageOf = "SELECT state, token, stage FROM kbv_jobs WHERE id = $1";
constexpr const char* kPutBuild =
    "INSERT INTO kbv_builds (build_key, blob, created_at) VALUES ($1, $2, {now}) ON CONFLICT (build_key) DO NOTHING";
constexpr const char* kGetBuild = "SELECT blob FROM kbv_builds WHERE build_key = $1";
constexpr const char* kHeartbeat =
    "UPDATE kbv_jobs SET lease_expires_at = {now} + CAST($3 AS DOUBLE PRECISION), updated_at = {now} "
    "WHERE id = $1 AND token = CAST($2 AS BIGINT) AND state = 'running'";
constexpr const char* kComplete =
    "UPDATE kbv_jobs SET state = 'done', record = $3, error = '', lease_expires_at = NULL, "
    "updated_at = {now} WHERE id = $1 AND token = CAST($2 AS BIGINT) AND state = 'running'";
constexpr const char* kFail =
    "UPDATE kbv_jobs SET "
    "state = CASE WHEN CAST($3 AS INTEGER) = 1 AND attempts < max_attempts THEN 'queued' ELSE 'failed' END, "
    "error = $4, lease_expires_at = NULL, updated_at = {now} "
    "WHERE id = $1 AND token = CAST($2 AS BIGINT) AND state = 'running'";
constexpr const char* kStateOf = "SELECT state, token FROM kbv_jobs WHERE id = $1";
constexpr const char* kDoneWithKey =
    "SELECT id FROM kbv_jobs WHERE job_key = $1 AND state = 'done' ORDER BY updated_at DESC, id LIMIT 1";
constexpr const char* kInsert =
    "INSERT INTO kbv_jobs (id, job_key, state, problem_name, problem_source, solution_source, options, "
    "max_attempts, sample_id, created_at, updated_at) "
    "VALUES ($1, $2, 'queued', $3, $4, $5, $6, CAST($7 AS INTEGER), CAST($8 AS INTEGER), {now}, {now}) "
    "ON CONFLICT (id) DO NOTHING";
constexpr const char* kCounts = "SELECT state, COUNT(*) FROM kbv_jobs GROUP BY state";
constexpr const char* kPutBlob =
    "INSERT INTO kbv_blobs (sha256, bytes, size, created_at) VALUES ($1, $2, CAST($3 AS BIGINT), {now}) "
    "ON CONFLICT (sha256) DO NOTHING";
constexpr const char* kGetBlob = "SELECT bytes FROM kbv_blobs WHERE sha256 = $1";

double to_double(const std::optional<std::string>& text) {
  return text ? std::strtod(text->c_str(), nullptr) : 0.0;
}
long long to_int(const std::optional<std::string>& text) {
  return text ? std::strtoll(text->c_str(), nullptr, 10) : 0;
}

bool is_lowercase_sha256(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

class SqlQueue final : public Queue {
 public:
  SqlQueue(std::unique_ptr<Connection> db, std::string url) : db_(std::move(db)), url_(std::move(url)) {}

  std::optional<std::string> submit(const JobSpec& spec, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    const std::string key = spec.key();
    auto done = run(kDoneWithKey, {key}, error);
    if (!done) return std::nullopt;
    if (!done->rows.empty() && done->rows[0][0]) return *done->rows[0][0];
    // The id is chosen here, so a statement run again after a reconnect inserts nothing twice.
    const std::string id = new_job_id();
    auto inserted = run(kInsert,
                        {id, key, spec.problem_name, spec.problem_source, spec.solution_source,
                         spec.options.dump(), static_cast<long long>(kDefaultMaxAttempts),
                         spec.sample_id ? Param(static_cast<long long>(*spec.sample_id)) : Param()},
                        error);
    if (!inserted) return std::nullopt;
    return id;
  }

  std::optional<Job> get(const std::string& id, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(std::string("SELECT ") + kJobColumns + " FROM kbv_jobs WHERE id = $1", {id}, error);
    if (!rows || rows->rows.empty()) return std::nullopt;
    return job_from_row(rows->rows[0], error);
  }

  std::optional<Lease> lease(const std::string& worker, double lease_seconds, std::string& error) override {
    return lease_stage(worker, lease_seconds, "", error);
  }

  std::optional<Lease> lease_stage(const std::string& worker, double lease_seconds, const std::string& stage,
                                   std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    if (!stage.empty() && stage != kStageBuild && stage != kStageEval) {
      error = "queue " + url_ + ": unknown stage '" + stage + "' (build, eval, or empty for any)";
      return std::nullopt;
    }
    if (!run(kRequeueExpired, {}, error)) return std::nullopt;
    auto rows = run(kLease, {worker, lease_seconds, stage}, error);
    if (!rows || rows->rows.empty()) return std::nullopt;
    const auto& row = rows->rows[0];
    if (!row[0]) {
      error = "queue " + url_ + ": a leased job came back without an id";
      return std::nullopt;
    }
    return Lease{*row[0], worker, to_int(row[1])};
  }

  std::optional<Job> job_of(const Lease& lease, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(std::string("SELECT ") + kJobColumns +
                        " FROM kbv_jobs WHERE id = $1 AND token = CAST($2 AS BIGINT) AND state = 'running'",
                    {lease.job_id, lease.token}, error);
    if (!rows || rows->rows.empty()) return std::nullopt;
    return job_from_row(rows->rows[0], error);
  }

  bool heartbeat(const Lease& lease, double lease_seconds, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(kHeartbeat, {lease.job_id, lease.token, lease_seconds}, error);
    return rows && rows->changed == 1;
  }

  bool complete(const Lease& lease, const nlohmann::json& record, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(kComplete, {lease.job_id, lease.token, record.dump()}, error);
    if (!rows) return false;
    if (rows->changed == 1) return true;
    // Nothing changed: either the lease was lost, or this statement already ran before a dropped
    // connection hid its answer (the job is done under this very token).
    return ended_under(lease, "done", error);
  }

  bool fail(const Lease& lease, const std::string& why, bool retry, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(kFail, {lease.job_id, lease.token, static_cast<long long>(retry ? 1 : 0), why}, error);
    if (!rows) return false;
    if (rows->changed == 1) return true;
    return ended_under(lease, retry ? "queued" : "failed", error) ||
           (error.empty() && retry && ended_under(lease, "failed", error));
  }

  bool to_eval(const Lease& lease, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(kToEval, {lease.job_id, lease.token}, error);
    if (!rows) return false;
    if (rows->changed == 1) return true;
    // Ran before a dropped connection hid its answer: queued in stage eval under this token.
    auto state = run(kStageOf, {lease.job_id}, error);
    if (!state || state->rows.empty()) return false;
    const auto& row = state->rows[0];
    return row[0].value_or("") == "queued" && to_int(row[1]) == lease.token && row[2].value_or("") == kStageEval;
  }

  bool put_build(const std::string& build_key, const std::string& blob_sha256, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    if (!is_lowercase_sha256(build_key) || !is_lowercase_sha256(blob_sha256)) {
      error = "queue " + url_ + ": build key '" + build_key + "' or blob '" + blob_sha256 +
              "' is not a sha256 (64 lowercase hex digits)";
      return false;
    }
    return run(kPutBuild, {build_key, blob_sha256}, error).has_value();
  }

  std::optional<std::string> get_build(const std::string& build_key, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    return single_text(kGetBuild, build_key, error);
  }

  std::optional<Counts> counts(std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(kCounts, {}, error);
    if (!rows) return std::nullopt;
    Counts counts;
    for (const auto& row : rows->rows) {
      const std::string state = row[0].value_or("");
      const long long n = to_int(row[1]);
      if (state == "queued") counts.queued = n;
      else if (state == "running") counts.running = n;
      else if (state == "done") counts.done = n;
      else if (state == "failed") counts.failed = n;
    }
    return counts;
  }

  bool put_blob(const std::string& sha256, const std::string& bytes, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    if (!is_lowercase_sha256(sha256)) {
      error = "queue " + url_ + ": blob name '" + sha256 + "' is not a sha256 (64 lowercase hex digits)";
      return false;
    }
    const std::string actual = sha256_hex(bytes);
    if (actual != sha256) {
      error = "queue " + url_ + ": blob " + sha256 + " refused: its bytes hash to " + actual;
      return false;
    }
    return run(kPutBlob, {sha256, Blob{bytes}, static_cast<long long>(bytes.size())}, error).has_value();
  }

  std::optional<std::string> get_blob(const std::string& sha256, std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    return single_text(kGetBlob, sha256, error);
  }

  std::optional<std::vector<Job>> done_jobs(std::string& error) override {
    std::lock_guard lock(mutex_);
    error.clear();
    auto rows = run(std::string("SELECT ") + kJobColumns + " FROM kbv_jobs WHERE state = 'done' ORDER BY updated_at, id",
                    {}, error);
    if (!rows) return std::nullopt;
    std::vector<Job> jobs;
    for (const auto& row : rows->rows) {
      std::optional<Job> job = job_from_row(row, error);
      if (!job) return std::nullopt;
      jobs.push_back(std::move(*job));
    }
    return jobs;
  }

  std::string url() const override { return url_; }

 private:
  // The first column of the first row of a one-key lookup; nullopt when there is none (or NULL).
  std::optional<std::string> single_text(const std::string& sql, const std::string& key, std::string& error) {
    auto rows = run(sql, {key}, error);
    if (!rows || rows->rows.empty() || !rows->rows[0][0]) return std::nullopt;
    return *rows->rows[0][0];
  }

  std::optional<Rows> run(const std::string& sql, const std::vector<Param>& params, std::string& error) {
    auto rows = db_->run(sql, params, error);
    if (!rows) error = "queue " + url_ + ": " + error;
    return rows;
  }

  // After an UPDATE that changed nothing: true when the job already is in `state` under this
  // lease's token (the same statement committed before a reconnect), false with an empty error
  // when the lease was lost.
  bool ended_under(const Lease& lease, const std::string& state, std::string& error) {
    auto rows = run(kStateOf, {lease.job_id}, error);
    if (!rows) return false;
    if (rows->rows.empty()) return false;
    const auto& row = rows->rows[0];
    // Leasing bumps the token, so the same token means nobody took the job since.
    return row[0].value_or("") == state && to_int(row[1]) == lease.token;
  }

  std::optional<Job> job_from_row(const std::vector<std::optional<std::string>>& row, std::string& error) {
    Job job;
    job.id = row[0].value_or("");
    auto state = state_from_name(row[1].value_or(""));
    if (!state) {
      error = "queue " + url_ + ": job " + job.id + " has an unknown state '" + row[1].value_or("") + "'";
      return std::nullopt;
    }
    job.state = *state;
    job.spec.problem_name = row[2].value_or("");
    job.spec.problem_source = row[3].value_or("");
    job.spec.solution_source = row[4].value_or("");
    job.spec.options = nlohmann::json::parse(row[5].value_or("{}"), nullptr, false);
    if (job.spec.options.is_discarded()) {
      error = "queue " + url_ + ": job " + job.id + " has options that are not JSON";
      return std::nullopt;
    }
    job.attempts = static_cast<int>(to_int(row[6]));
    job.max_attempts = static_cast<int>(to_int(row[7]));
    job.worker = row[8].value_or("");
    if (row[9]) {
      job.record = nlohmann::json::parse(*row[9], nullptr, false);
      if (job.record.is_discarded()) {
        error = "queue " + url_ + ": job " + job.id + " has a record that is not JSON";
        return std::nullopt;
      }
    }
    job.error = row[10].value_or("");
    job.created_at = to_double(row[11]);
    job.updated_at = to_double(row[12]);
    job.stage = row[13].value_or(kStageBuild);
    if (row[14]) job.spec.sample_id = static_cast<int>(to_int(row[14]));
    return job;
  }

  std::mutex mutex_;
  std::unique_ptr<Connection> db_;
  std::string url_;
};

}  // namespace

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  size_t at = 0;
  while ((at = text.find(from, at)) != std::string::npos) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

std::string redact_url(const std::string& url) {
  std::string out = url;
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t at = out.find('@', start);
    const size_t slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const size_t begin = p + 9;
    size_t end = out.find_first_of("& ", begin);
    if (end == std::string::npos) end = out.size();
    out.replace(begin, end - begin, "***");
  }
  return out;
}

std::string JobSpec::key() const {
  return sha256_hex_parts({"kbv-job-v1", problem_source, solution_source, options.dump()});
}

const char* state_name(State state) {
  switch (state) {
    case State::queued: return "queued";
    case State::running: return "running";
    case State::done: return "done";
    case State::failed: return "failed";
  }
  return "queued";
}

std::optional<State> state_from_name(const std::string& name) {
  if (name == "queued") return State::queued;
  if (name == "running") return State::running;
  if (name == "done") return State::done;
  if (name == "failed") return State::failed;
  return std::nullopt;
}

std::string new_job_id() {
  unsigned char bytes[16] = {};
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    // OpenSSL's generator failed (no entropy source): fall back to the kernel's.
    if (FILE* f = std::fopen("/dev/urandom", "rb")) {
      size_t got = std::fread(bytes, 1, sizeof bytes, f);
      (void)got;
      std::fclose(f);
    }
  }
  static const char* digits = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += digits[b >> 4];
    id += digits[b & 15];
  }
  return id;
}

Queue::~Queue() = default;

std::optional<Lease> Queue::lease_stage(const std::string& worker, double lease_seconds, const std::string& stage,
                                        std::string& error) {
  if (stage.empty()) return lease(worker, lease_seconds, error);
  error = "queue " + url() + " has no build and eval stages (kbv worker --role " + stage + " needs a database queue)";
  return std::nullopt;
}

bool Queue::to_eval(const Lease&, std::string& error) {
  error = "queue " + url() + " has no build and eval stages";
  return false;
}

bool Queue::put_build(const std::string&, const std::string&, std::string& error) {
  error = "queue " + url() + " keeps no builds";
  return false;
}

std::optional<std::string> Queue::get_build(const std::string&, std::string&) { return std::nullopt; }

std::unique_ptr<Queue> Queue::open(const std::string& url, std::string& error) {
  error.clear();
  std::unique_ptr<Connection> db;
  if (url.rfind("sqlite:", 0) == 0) {
    std::string path = url.substr(7);
    if (path.rfind("//", 0) == 0) path = path.substr(2);  // sqlite:///abs/path
    if (path.empty()) {
      error = "queue URL '" + redact_url(url) + "' names no file (expected sqlite:/path/queue.db)";
      return nullptr;
    }
    db = open_sqlite_connection(path, url, error);
  } else if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    db = open_postgres_connection(url, error);
  } else {
    error = "queue URL '" + redact_url(url) + "' is neither sqlite:/path/queue.db nor postgresql://user@host:port/db";
    return nullptr;
  }
  if (!db) return nullptr;
  if (std::string why = db->ensure_schema(); !why.empty()) {
    error = "queue " + redact_url(url) + ": " + why;
    return nullptr;
  }
  return std::make_unique<SqlQueue>(std::move(db), redact_url(url));
}

}  // namespace kbv::queue
