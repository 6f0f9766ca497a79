// The results store: one SQLite file, table `results`, one committed transaction per put.
#include "store/store.h"

#include <sqlite3.h>

#include <chrono>
#include <utility>

namespace kbv {
// Store::Impl's members: of a named namespace, since a unity build's translation unit must not give
// a member an anonymous type from another file (-Wsubobject-linkage).
namespace store_db {
struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;
}  // namespace store_db

namespace {

using store_db::DbPtr;
using store_db::StmtPtr;

// Bumped when the schema changes; open() migrates older files and refuses newer ones.
constexpr int kSchemaVersion = 1;
// PRAGMA application_id marks the file as a kbv store ("kbv1").
constexpr int kApplicationId = 0x6b627631;

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE IF NOT EXISTS results (
  level INTEGER NOT NULL,
  problem_id INTEGER NOT NULL,
  sample_id INTEGER NOT NULL,
  solution_hash TEXT NOT NULL,
  protocol_hash TEXT NOT NULL,
  created_at REAL NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (level, problem_id, sample_id, solution_hash, protocol_hash)
);
CREATE INDEX IF NOT EXISTS results_by_protocol ON results (protocol_hash);
)sql";

constexpr const char* kHas =
    "SELECT 1 FROM results WHERE level = ?1 AND problem_id = ?2 AND sample_id = ?3 "
    "AND solution_hash = ?4 AND protocol_hash = ?5 LIMIT 1";
constexpr const char* kPut =
    "INSERT OR REPLACE INTO results "
    "(level, problem_id, sample_id, solution_hash, protocol_hash, created_at, record) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
// Newest first within each (level, problem_id, sample_id); latest() keeps the first row of each
// group whose record parses.
constexpr const char* kLatestAll =
    "SELECT level, problem_id, sample_id, record FROM results "
    "ORDER BY level, problem_id, sample_id, created_at DESC, rowid DESC";
constexpr const char* kRows =
    "SELECT level, problem_id, sample_id, solution_hash, protocol_hash, created_at, record FROM results "
    "ORDER BY level, problem_id, sample_id, created_at DESC, rowid DESC";
constexpr const char* kLatestProtocol =
    "SELECT level, problem_id, sample_id, record FROM results WHERE protocol_hash = ?1 "
    "ORDER BY level, problem_id, sample_id, created_at DESC, rowid DESC";

// Resets a statement and clears its bindings when it goes out of scope.
struct StmtUse {
  sqlite3_stmt* stmt;
  explicit StmtUse(sqlite3_stmt* s) : stmt(s) {}
  ~StmtUse() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;
};

std::string db_message(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

// Runs one statement that returns at most one integer (a pragma); false on error.
bool query_int(sqlite3* db, const char* sql, int& value) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) return false;
  StmtPtr stmt(raw);
  int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_ROW) {
    value = sqlite3_column_int(stmt.get(), 0);
    rc = sqlite3_step(stmt.get());
  }
  return rc == SQLITE_DONE;
}

bool exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

bool prepare(sqlite3* db, const char* sql, StmtPtr& out) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
    return false;
  }
  out.reset(raw);
  return true;
}

void bind_key(sqlite3_stmt* stmt, const RecordKey& key) {
  sqlite3_bind_int(stmt, 1, key.level);
  sqlite3_bind_int(stmt, 2, key.problem_id);
  sqlite3_bind_int(stmt, 3, key.sample_id);
  sqlite3_bind_text(stmt, 4, key.solution_hash.data(), static_cast<int>(key.solution_hash.size()),
                    SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 5, key.protocol_hash.data(), static_cast<int>(key.protocol_hash.size()),
                    SQLITE_TRANSIENT);
}

double unix_seconds_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Store::Impl {
  std::filesystem::path path;
  DbPtr db;
  StmtPtr has;
  StmtPtr put;
  StmtPtr latest_all;
  StmtPtr latest_protocol;
  bool read_only = false;
  // The statements are declared after db, so they are finalized before the connection closes.
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

std::unique_ptr<Store> Store::open(const std::filesystem::path& path, std::string& error, Mode mode) {
  error.clear();
  const bool read_only = mode == Mode::read_only;
  const std::string where = path.string() + ": cannot open results store: ";
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->read_only = read_only;

  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                               SQLITE_OPEN_NOMUTEX,
                           nullptr);
  impl->db.reset(raw);  // closed on every return path, even when the open failed
  sqlite3* db = raw;
  if (rc != SQLITE_OK) {
    error = where + db_message(db);
    return nullptr;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);

  // The first read of the header: a file that is not a SQLite database fails here, untouched.
  int version = 0;
  int app_id = 0;
  bool header = query_int(db, "PRAGMA user_version", version) && query_int(db, "PRAGMA application_id", app_id);
  if (!header && read_only) {
    // A WAL-mode file on a read-only mount: SQLite cannot make the -shm file beside it. Read it
    // as immutable (no locks, no -wal), which is right for a finished run nobody writes.
    impl->db.reset();
    raw = nullptr;
    std::string uri = "file:" + path.string() + "?immutable=1";
    rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    impl->db.reset(raw);
    db = raw;
    header = rc == SQLITE_OK && query_int(db, "PRAGMA user_version", version) &&
             query_int(db, "PRAGMA application_id", app_id);
  }
  if (!header) {
    error = where + db_message(db);
    return nullptr;
  }
  // A damaged file (corrupted pages) is said as such: read as "no records" it would make a run
  // evaluate everything again and its files be rewritten from nothing.
  if (version > 0) {
    std::string damage;
    sqlite3_stmt* check_raw = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &check_raw, nullptr) != SQLITE_OK) {
      damage = db_message(db);
    } else {
      StmtPtr check(check_raw);
      int step = sqlite3_step(check.get());
      for (; step == SQLITE_ROW; step = sqlite3_step(check.get())) {
        const unsigned char* text = sqlite3_column_text(check.get(), 0);
        std::string line = text ? reinterpret_cast<const char*>(text) : "";
        if (line != "ok" && damage.empty()) damage = line;
      }
      if (step != SQLITE_DONE && damage.empty()) damage = db_message(db);
    }
    if (!damage.empty()) {
      error = path.string() + ": the results store is damaged (" + damage +
              "); nothing was read or written. Restore it from a copy, or move it aside to start the run's "
              "store anew (its eval_results.json files are kept)";
      return nullptr;
    }
  }
  if (app_id != 0 && app_id != kApplicationId) {
    error = where + "a SQLite database of another application (application_id " +
            std::to_string(app_id) + ")";
    return nullptr;
  }
  if (version > kSchemaVersion) {
    error = where + "schema version " + std::to_string(version) +
            " is newer than this kbv supports (" + std::to_string(kSchemaVersion) +
            "); use a newer kbv";
    return nullptr;
  }

  if (read_only) {
    if (version == 0) {
      error = where + "not a kbv results store (no schema)";
      return nullptr;
    }
    if (!prepare(db, kHas, impl->has) || !prepare(db, kLatestAll, impl->latest_all) ||
        !prepare(db, kLatestProtocol, impl->latest_protocol)) {
      error = where + db_message(db);
      return nullptr;
    }
    return std::unique_ptr<Store>(new Store(std::move(impl)));
  }
  // WAL: readers do not block the writer; NORMAL sync is durable against process crashes.
  {
    sqlite3_stmt* wal_raw = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &wal_raw, nullptr) != SQLITE_OK) {
      error = where + db_message(db);
      return nullptr;
    }
    StmtPtr wal(wal_raw);
    rc = sqlite3_step(wal.get());
    while (rc == SQLITE_ROW) rc = sqlite3_step(wal.get());
    if (rc != SQLITE_DONE) {
      error = where + db_message(db);
      return nullptr;
    }
  }
  if (!exec(db, "PRAGMA synchronous=NORMAL")) {
    error = where + db_message(db);
    return nullptr;
  }

  if (version < kSchemaVersion) {
    // Create (or migrate) inside one write transaction so that two processes opening a new file
    // at once do not race; the statements are idempotent.
    if (!exec(db, "BEGIN IMMEDIATE")) {
      error = where + db_message(db);
      return nullptr;
    }
    const std::string stamp = "PRAGMA user_version=" + std::to_string(kSchemaVersion) +
                              "; PRAGMA application_id=" + std::to_string(kApplicationId);
    if (!exec(db, kCreateSchema) || !exec(db, stamp.c_str())) {
      error = where + db_message(db);
      exec(db, "ROLLBACK");
      return nullptr;
    }
    if (!exec(db, "COMMIT")) {
      error = where + db_message(db);
      exec(db, "ROLLBACK");
      return nullptr;
    }
  }

  if (!prepare(db, kHas, impl->has) || !prepare(db, kPut, impl->put) ||
      !prepare(db, kLatestAll, impl->latest_all) ||
      !prepare(db, kLatestProtocol, impl->latest_protocol)) {
    error = where + db_message(db);
    return nullptr;
  }
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

bool Store::has(const RecordKey& key) {
  sqlite3_stmt* stmt = impl_->has.get();
  StmtUse use(stmt);
  bind_key(stmt, key);
  return sqlite3_step(stmt) == SQLITE_ROW;
}

std::string Store::put(const RecordKey& key, const Record& record) {
  const std::string where = impl_->path.string() + ": cannot store result: ";
  if (impl_->read_only) return where + "the store was opened read-only";
  // Invalid UTF-8 in a string is replaced rather than thrown.
  const std::string text = to_json(record).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  sqlite3_stmt* stmt = impl_->put.get();
  StmtUse use(stmt);
  bind_key(stmt, key);
  sqlite3_bind_double(stmt, 6, unix_seconds_now());
  sqlite3_bind_text(stmt, 7, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  // A single statement in autocommit mode: its own transaction, committed when step returns.
  if (sqlite3_step(stmt) != SQLITE_DONE) return where + db_message(impl_->db.get());
  return {};
}

std::vector<Record> Store::latest(const std::string& protocol_hash) {
  std::vector<Record> out;
  sqlite3_stmt* stmt =
      protocol_hash.empty() ? impl_->latest_all.get() : impl_->latest_protocol.get();
  StmtUse use(stmt);
  if (!protocol_hash.empty()) {
    sqlite3_bind_text(stmt, 1, protocol_hash.data(), static_cast<int>(protocol_hash.size()),
                      SQLITE_TRANSIENT);
  }
  bool have_group = false;
  int level = 0, problem_id = 0, sample_id = 0;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const int l = sqlite3_column_int(stmt, 0);
    const int p = sqlite3_column_int(stmt, 1);
    const int s = sqlite3_column_int(stmt, 2);
    if (have_group && l == level && p == problem_id && s == sample_id) continue;  // older row
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
    if (!text) continue;
    const int size = sqlite3_column_bytes(stmt, 3);
    // A corrupt record is skipped; the next-newest row of the same sample may stand instead.
    RecordRead record = record_from_json(nlohmann::json::parse(text, text + size, nullptr, false));
    if (!record.ok()) continue;
    have_group = true;
    level = l;
    problem_id = p;
    sample_id = s;
    out.push_back(std::move(record.record));
  }
  return out;
}

std::vector<StoredRow> Store::rows() {
  std::vector<StoredRow> out;
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(impl_->db.get(), kRows, -1, &raw, nullptr) != SQLITE_OK) return out;
  StmtPtr stmt(raw);
  auto text_of = [&](int column) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), column));
    return t ? std::string(t, static_cast<size_t>(sqlite3_column_bytes(stmt.get(), column))) : std::string();
  };
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    StoredRow row;
    row.key.level = sqlite3_column_int(stmt.get(), 0);
    row.key.problem_id = sqlite3_column_int(stmt.get(), 1);
    row.key.sample_id = sqlite3_column_int(stmt.get(), 2);
    row.key.solution_hash = text_of(3);
    row.key.protocol_hash = text_of(4);
    row.created_at = sqlite3_column_double(stmt.get(), 5);
    const std::string text = text_of(6);
    RecordRead read = record_from_json(nlohmann::json::parse(text, nullptr, false));
    if (!read.ok()) continue;  // a corrupt row is skipped
    row.record = std::move(read.record);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace kbv
