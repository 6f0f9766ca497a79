// The queue's view of a database connection (internal to src/queue): statements written once with
// PostgreSQL's $N parameters and two placeholders, {now} (the database's clock, unix seconds) and
// {skip_locked} (row locks a concurrent leaser skips), which each engine spells its own way. The
// queue's logic (queue.cc) is written once against this; sqlite_db.cc and postgres_db.cc are the
// two engines.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kbv::queue {

struct Blob {
  std::string bytes;
};
// A statement parameter: NULL, text, an integer, a real or bytes.
using Param = std::variant<std::monostate, std::string, long long, double, Blob>;

struct Rows {
  std::vector<std::vector<std::optional<std::string>>> rows;  // every value as text (blobs: raw bytes)
  long long changed = 0;  // rows an INSERT/UPDATE/DELETE changed
};

class Connection {
 public:
  virtual ~Connection() = default;
  // Runs one statement (autocommit: one statement is one transaction). nullopt with `error` set on
  // failure; an engine that lost its connection reconnects and runs the statement once more first.
  virtual std::optional<Rows> run(const std::string& sql, const std::vector<Param>& params,
                                  std::string& error) = 0;
  // Creates the tables when missing (once, even with several processes starting together) and
  // checks the schema version. "" or the error.
  virtual std::string ensure_schema() = 0;
  virtual std::string describe() const = 0;  // the URL, for messages
};

// The schema, one text for both engines ({real}, {blob} are the engine's type names).
extern const char* const kSchemaSql;
// Version 2 added kbv_jobs.stage and kbv_builds (kbv worker --role). A version-1 queue is upgraded
// in place when opened: kMigrateV1Sql (ALTER TABLE; its jobs are in stage 'build', which --role
// all workers take as before), then kSchemaV2Sql (what refers to the new column).
extern const char* const kMigrateV1Sql;
extern const char* const kSchemaV2Sql;
// Version 3 added kbv_jobs.sample_id (the run folder's sample id of a job kbv eval --run --queue
// submitted; NULL otherwise): kMigrateV2Sql, after kMigrateV1Sql for a version-1 queue.
extern const char* const kMigrateV2Sql;
constexpr int kQueueSchemaVersion = 3;

// `path` may not exist yet (created, with its folder).
std::unique_ptr<Connection> open_sqlite_connection(const std::string& path, const std::string& url,
                                                   std::string& error);
std::unique_ptr<Connection> open_postgres_connection(const std::string& url, std::string& error);

// Replaces every occurrence of `from` in `text` by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to);

}  // namespace kbv::queue
