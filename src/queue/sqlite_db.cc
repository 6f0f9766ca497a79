// The SQLite engine: one file, WAL mode, shared by the processes of one host. A writer holds the
// file's write lock for one statement, so the lease's UPDATE ... WHERE id = (SELECT ...) is atomic
// without row locks; concurrent writers wait (busy timeout) instead of failing.
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <system_error>
#include <thread>

#include "queue/db.h"

namespace kbv::queue {
namespace {

constexpr int kBusyTimeoutMs = 60000;
constexpr const char* kSqliteNow = "((julianday('now') - 2440587.5) * 86400.0)";

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(sqlite3* db, std::string url) : db_(db), url_(std::move(url)) {}

  std::optional<Rows> run(const std::string& sql, const std::vector<Param>& params,
                          std::string& error) override {
    sqlite3_stmt* stmt = statement(sql, error);
    if (!stmt) return std::nullopt;
    struct Reset {
      sqlite3_stmt* s;
      ~Reset() {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
      }
    } reset{stmt};
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = static_cast<int>(i + 1);
      const Param& p = params[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::monostate>(p)) {
        rc = sqlite3_bind_null(stmt, at);
      } else if (const auto* text = std::get_if<std::string>(&p)) {
        rc = sqlite3_bind_text64(stmt, at, text->data(), text->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      } else if (const auto* n = std::get_if<long long>(&p)) {
        rc = sqlite3_bind_int64(stmt, at, *n);
      } else if (const auto* x = std::get_if<double>(&p)) {
        rc = sqlite3_bind_double(stmt, at, *x);
      } else if (const auto* blob = std::get_if<Blob>(&p)) {
        rc = sqlite3_bind_blob64(stmt, at, blob->bytes.data(), blob->bytes.size(), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) {
        error = "cannot bind parameter " + std::to_string(at) + ": " + sqlite3_errmsg(db_.get());
        return std::nullopt;
      }
    }
    Rows out;
    while (true) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        error = std::string(sqlite3_errmsg(db_.get())) + " (SQLite code " + std::to_string(rc) + ")";
        return std::nullopt;
      }
      std::vector<std::optional<std::string>> row;
      const int columns = sqlite3_column_count(stmt);
      for (int c = 0; c < columns; ++c) {
        const int type = sqlite3_column_type(stmt, c);
        if (type == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else if (type == SQLITE_BLOB) {
          const void* data = sqlite3_column_blob(stmt, c);
          const int size = sqlite3_column_bytes(stmt, c);
          row.emplace_back(data ? std::string(static_cast<const char*>(data), static_cast<size_t>(size))
                                : std::string());
        } else {
          const unsigned char* text = sqlite3_column_text(stmt, c);
          const int size = sqlite3_column_bytes(stmt, c);
          row.emplace_back(text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size))
                                : std::string());
        }
      }
      out.rows.push_back(std::move(row));
    }
    out.changed = sqlite3_changes64(db_.get());
    return out;
  }

  std::string ensure_schema() override {
    // BEGIN IMMEDIATE takes the write lock first, so processes starting together create the
    // tables once, one after the other.
    std::string schema = replace_all(replace_all(kSchemaSql, "{real}", "REAL"), "{blob}", "BLOB");
    std::string error;
    if (!exec("BEGIN IMMEDIATE", error)) return "cannot start the schema's transaction: " + error;
    const std::string why = create(schema);
    if (!why.empty()) {
      exec("ROLLBACK", error);
      return why;
    }
    if (!exec("COMMIT", error)) return "cannot commit the schema: " + error;
    return "";
  }

  std::string describe() const override { return url_; }

 private:
  std::string create(const std::string& schema) {
    std::string error;
    if (!exec(schema.c_str(), error)) return "cannot create the queue's tables: " + error;
    auto rows = run("SELECT value FROM kbv_queue_meta WHERE name = 'schema_version'", {}, error);
    if (!rows) return "cannot read the schema version: " + error;
    if (rows->rows.empty()) {
      if (!run("INSERT INTO kbv_queue_meta (name, value) VALUES ('schema_version', $1)",
               {std::to_string(kQueueSchemaVersion)}, error)) {
        return "cannot write the schema version: " + error;
      }
      if (!exec(kSchemaV2Sql, error)) return "cannot create the queue's indexes: " + error;
      return "";
    }
    std::string version = rows->rows[0][0].value_or("");
    if (version == "1" || version == "2") {  // upgraded in place (db.h kMigrateV1Sql, kMigrateV2Sql), in this transaction
      if ((version == "1" && !exec(kMigrateV1Sql, error)) || !exec(kMigrateV2Sql, error) ||
          !run("UPDATE kbv_queue_meta SET value = $1 WHERE name = 'schema_version'",
               {std::to_string(kQueueSchemaVersion)}, error)) {
        return "cannot upgrade the queue from schema version " + version + ": " + error;
      }
      version = std::to_string(kQueueSchemaVersion);
    }
    if (version == std::to_string(kQueueSchemaVersion) && !exec(kSchemaV2Sql, error)) {
      return "cannot create the queue's indexes: " + error;
    }
    if (version != std::to_string(kQueueSchemaVersion)) {
      return "the queue's schema version is " + version + ", this kbv reads version " +
             std::to_string(kQueueSchemaVersion) + " (use the kbv that created it, or a new queue file)";
    }
    return "";
  }

  bool exec(const std::string& sql, std::string& error) {
    char* message = nullptr;
    if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      error = message ? message : sqlite3_errmsg(db_.get());
      sqlite3_free(message);
      return false;
    }
    return true;
  }

  // Prepared once per statement text (the engine's spelling of {now} and {skip_locked}).
  sqlite3_stmt* statement(const std::string& sql, std::string& error) {
    auto found = statements_.find(sql);
    if (found != statements_.end()) return found->second.get();
    std::string text = replace_all(replace_all(sql, "{now}", kSqliteNow), "{skip_locked}", "");
    // $N (PostgreSQL's spelling) is ?N in SQLite, with the same numbering.
    text = replace_all(text, "$", "?");
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db_.get(), text.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
      error = "cannot prepare a statement: " + std::string(sqlite3_errmsg(db_.get()));
      return nullptr;
    }
    return statements_.emplace(sql, std::unique_ptr<sqlite3_stmt, StmtFinalizer>(raw)).first->second.get();
  }

  // Declared before statements_, so the statements are finalized before the database closes.
  std::unique_ptr<sqlite3, DbCloser> db_;
  std::string url_;
  std::map<std::string, std::unique_ptr<sqlite3_stmt, StmtFinalizer>> statements_;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite_connection(const std::string& path, const std::string& url,
                                                   std::string& error) {
  const std::filesystem::path file(path);
  if (file.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) {
      error = "queue " + url + ": cannot create the folder " + file.parent_path().string() + ": " + ec.message();
      return nullptr;
    }
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  std::unique_ptr<sqlite3, DbCloser> db(raw);
  if (rc != SQLITE_OK) {
    error = "queue " + url + ": cannot open " + path + ": " + (raw ? sqlite3_errmsg(raw) : "out of memory");
    return nullptr;
  }
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  // WAL: readers never block the writer; NORMAL sync is durable across a process crash (the
  // queue's failure model), a power loss may drop the last transactions. Setting WAL on a new file
  // takes its exclusive lock: two processes opening the same new queue at once (`kbv eval --queue`
  // and the `kbv worker` started beside it) can both hold the shared lock and want it, and SQLite
  // answers one SQLITE_BUSY at once, without its busy handler (a deadlock it will not wait out):
  // tried again, for as long as the busy timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    char* message = nullptr;
    const int pragma = sqlite3_exec(db.get(), "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;", nullptr,
                                    nullptr, &message);
    if (pragma == SQLITE_OK) break;
    const int primary = pragma & 0xff;
    if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
      sqlite3_free(message);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    error = "queue " + url + ": " + path + " is not a usable SQLite file: " +
            (message ? message : sqlite3_errmsg(db.get()));
    sqlite3_free(message);
    return nullptr;
  }
  return std::make_unique<SqliteConnection>(db.release(), url);
}

}  // namespace kbv::queue
