// The PostgreSQL engine (libpq): several hosts share one database. Leasing takes the oldest queued
// row with FOR UPDATE SKIP LOCKED, so concurrent leasers never wait on each other's row. A dropped
// connection (server restarted, network cut) is re-opened and the statement run once more; every
// statement the queue runs is safe to run twice (ids are chosen by the client, state changes are
// fenced by the lease's token). Without libpq in the build, opening a postgresql:// URL is an error
// that says so.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "queue/db.h"
#include "queue/queue.h"

#ifdef KBV_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

namespace kbv::queue {

#ifdef KBV_HAVE_LIBPQ
namespace {

constexpr const char* kPostgresNow = "(extract(epoch from clock_timestamp())::double precision)";
constexpr unsigned kByteaOid = 17;
// Any 64-bit number the queue alone uses: serialises the schema's creation between processes.
constexpr const char* kSchemaLockKey = "7236814393265211649";

std::string trimmed(const char* message) {
  std::string text = message ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// bytea's text output: \x followed by hex digits.
std::string from_bytea_hex(const char* text, int length) {
  std::string out;
  if (length < 2 || text[0] != '\\' || text[1] != 'x') return std::string(text, static_cast<size_t>(length));
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
  };
  out.reserve(static_cast<size_t>(length - 2) / 2);
  for (int i = 2; i + 1 < length; i += 2) out += static_cast<char>(nibble(text[i]) * 16 + nibble(text[i + 1]));
  return out;
}

struct ResultGuard {
  PGresult* res;
  ~ResultGuard() { PQclear(res); }
};

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(PGconn* conn, std::string url) : conn_(conn), url_(std::move(url)) {}
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  std::optional<Rows> run(const std::string& sql, const std::vector<Param>& params,
                          std::string& error) override {
    const std::string text = replace_all(replace_all(sql, "{now}", kPostgresNow), "{skip_locked}", " FOR UPDATE SKIP LOCKED");
    std::vector<std::string> storage(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    std::vector<int> lengths(params.size(), 0), formats(params.size(), 0);
    for (size_t i = 0; i < params.size(); ++i) {
      const Param& p = params[i];
      if (std::holds_alternative<std::monostate>(p)) continue;
      if (const auto* s = std::get_if<std::string>(&p)) {
        storage[i] = *s;
      } else if (const auto* n = std::get_if<long long>(&p)) {
        storage[i] = std::to_string(*n);
      } else if (const auto* x = std::get_if<double>(&p)) {
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%.17g", *x);
        storage[i] = buffer;
      } else if (const auto* blob = std::get_if<Blob>(&p)) {
        storage[i] = blob->bytes;
        formats[i] = 1;  // binary: the bytes as they are
      }
      values[i] = storage[i].c_str();
      lengths[i] = static_cast<int>(storage[i].size());
    }
    // A dropped connection is re-opened once; a deadlock or serialisation failure between two
    // workers' statements is retried a few times (PostgreSQL rolled the statement back).
    bool reconnected = false;
    for (int attempt = 0; attempt < 6; ++attempt) {
      if (PQstatus(conn_) != CONNECTION_OK) {
        if (reconnected) break;
        reconnected = true;
        PQreset(conn_);
        if (PQstatus(conn_) != CONNECTION_OK) {
          error = "the connection was lost and re-opening it failed: " + trimmed(PQerrorMessage(conn_));
          return std::nullopt;
        }
      }
      ResultGuard res{PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                                   lengths.data(), formats.data(), 0)};
      const ExecStatusType status = PQresultStatus(res.res);
      if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return rows_of(res.res);
      const char* state = PQresultErrorField(res.res, PG_DIAG_SQLSTATE);
      const std::string sqlstate = state ? state : "";
      error = trimmed(res.res ? PQresultErrorMessage(res.res) : PQerrorMessage(conn_));
      if (PQstatus(conn_) != CONNECTION_OK) {
        if (reconnected) break;
        continue;  // re-open and run once more
      }
      if (sqlstate == "40P01" || sqlstate == "40001") {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * (attempt + 1)));
        continue;
      }
      return std::nullopt;
    }
    if (error.empty()) error = trimmed(PQerrorMessage(conn_));
    return std::nullopt;
  }

  std::string ensure_schema() override {
    // Already there (the common case: every worker opens the queue): no DDL, no locks.
    {
      ResultGuard res{PQexec(conn_, "SELECT value FROM kbv_queue_meta WHERE name = 'schema_version'")};
      if (PQresultStatus(res.res) == PGRES_TUPLES_OK && PQntuples(res.res) == 1 &&
          std::string(PQgetvalue(res.res, 0, 0)) == std::to_string(kQueueSchemaVersion)) {
        return "";
      }
    }
    const std::string schema = replace_all(replace_all(kSchemaSql, "{real}", "DOUBLE PRECISION"), "{blob}", "BYTEA");
    // A version-1 queue gets its stage column, a version-1 or -2 queue its sample_id column (db.h
    // kMigrateV1Sql, kMigrateV2Sql, spelt IF NOT EXISTS so that a fresh or already upgraded table is
    // left alone), and is marked the current version, in one transaction.
    const std::string version_text = std::to_string(kQueueSchemaVersion);
    const std::string script =
        std::string("BEGIN; SELECT pg_advisory_xact_lock(") + kSchemaLockKey + ");" + schema +
        "INSERT INTO kbv_queue_meta (name, value) VALUES ('schema_version', '" + version_text +
        "') ON CONFLICT (name) DO NOTHING;" +
        replace_all(kMigrateV1Sql, "ADD COLUMN stage", "ADD COLUMN IF NOT EXISTS stage") +
        replace_all(kMigrateV2Sql, "ADD COLUMN sample_id", "ADD COLUMN IF NOT EXISTS sample_id") +
        "UPDATE kbv_queue_meta SET value = '" + version_text +
        "' WHERE name = 'schema_version' AND value IN ('1', '2');" +
        kSchemaV2Sql + " COMMIT;";
    {
      ResultGuard res{PQexec(conn_, script.c_str())};
      const ExecStatusType status = PQresultStatus(res.res);
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        std::string why = trimmed(PQresultErrorMessage(res.res));
        ResultGuard rollback{PQexec(conn_, "ROLLBACK")};
        return "cannot create the queue's tables: " + why;
      }
    }
    std::string error;
    auto rows = run("SELECT value FROM kbv_queue_meta WHERE name = 'schema_version'", {}, error);
    if (!rows) return "cannot read the schema version: " + error;
    const std::string version = rows->rows.empty() ? "" : rows->rows[0][0].value_or("");
    if (version != std::to_string(kQueueSchemaVersion)) {
      return "the queue's schema version is " + version + ", this kbv reads version " +
             std::to_string(kQueueSchemaVersion) + " (use the kbv that created it, or another database)";
    }
    return "";
  }

  std::string describe() const override { return url_; }

 private:
  static Rows rows_of(PGresult* res) {
    Rows out;
    const int n = PQntuples(res), columns = PQnfields(res);
    for (int r = 0; r < n; ++r) {
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(res, r, c)) {
          row.emplace_back(std::nullopt);
          continue;
        }
        const char* value = PQgetvalue(res, r, c);
        const int length = PQgetlength(res, r, c);
        if (PQftype(res, c) == kByteaOid) {
          row.emplace_back(from_bytea_hex(value, length));
        } else {
          row.emplace_back(std::string(value, static_cast<size_t>(length)));
        }
      }
      out.rows.push_back(std::move(row));
    }
    const char* changed = PQcmdTuples(res);
    out.changed = (changed && *changed) ? std::strtoll(changed, nullptr, 10) : 0;
    return out;
  }

  PGconn* conn_;
  std::string url_;
};

}  // namespace

// Defaults a URL does not set: a bounded connect, and a connection whose peer vanished (a host
// down, a network cut) fails within about 30 s instead of hanging a worker on TCP's retries.
std::string with_default_params(const std::string& url) {
  std::string out = url;
  for (const char* param : {"connect_timeout=10", "tcp_user_timeout=30000", "keepalives_idle=30"}) {
    const std::string name = std::string(param).substr(0, std::string(param).find('=') + 1);
    if (out.find(name) != std::string::npos) continue;
    out += (out.find('?') == std::string::npos ? "?" : "&");
    out += param;
  }
  return out;
}

std::unique_ptr<Connection> open_postgres_connection(const std::string& url, std::string& error) {
  PGconn* conn = PQconnectdb(with_default_params(url).c_str());
  if (!conn) {
    error = "queue " + redact_url(url) + ": libpq could not allocate a connection";
    return nullptr;
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    error = "queue " + redact_url(url) + ": cannot connect: " + trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return nullptr;
  }
  // Notices (CREATE ... IF NOT EXISTS "already exists, skipping") are not for the user's terminal.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  return std::make_unique<PostgresConnection>(conn, redact_url(url));
}

#else

std::unique_ptr<Connection> open_postgres_connection(const std::string& url, std::string& error) {
  error = "queue " + redact_url(url) + ": this kbv was built without libpq, so it cannot use PostgreSQL "
          "(install libpq-dev and rebuild)";
  return nullptr;
}

#endif

}  // namespace kbv::queue
