// The results store: one SQLite file per run folder (RUN_DIR/kbv.sqlite). Every finished
// record is committed at once, so an interrupted run loses nothing already finished.
// Schema: table results(level, problem_id, sample_id, solution_hash, protocol_hash, created_at
// (unix seconds), record (JSON text)), keyed by the five key fields; PRAGMA user_version is the
// schema version (open() refuses a file from a newer kbv).
// Thread-safety: a Store is used by one thread at a time (the caller serialises); several
// processes may share one file (WAL mode, 5 s busy timeout).
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace kbv {

struct RecordKey {
  int level = 0;
  int problem_id = 0;
  int sample_id = 0;
  std::string solution_hash;  // sha256 of the evaluated code
  std::string protocol_hash;  // sha256 of the protocol knobs (see supervisor/verdict.h)
};

// One stored row, as rows() returns it.
struct StoredRow {
  RecordKey key;
  double created_at = 0;  // unix seconds
  Record record;
};

class Store {
 public:
  enum class Mode {
    read_write,  // opens or creates the file (WAL mode, busy timeout)
    read_only,   // an existing file, never written: reports and exports (also on a read-only mount)
  };
  // Opens the store and checks its integrity (PRAGMA quick_check): a damaged file is an error,
  // never "no records". The error message names the path and what to do.
  static std::unique_ptr<Store> open(const std::filesystem::path& path, std::string& error,
                                     Mode mode = Mode::read_write);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Is a record stored for exactly this key?
  bool has(const RecordKey& key);
  // Inserts or replaces the record (a JSON object) for this key (one committed transaction).
  // Returns "" or an error.
  std::string put(const RecordKey& key, const Record& record);  // read_only: an error
  // The newest record per (level, problem_id, sample_id) among those with this protocol hash
  // (all protocols when empty), ordered by level, problem id, sample id. Newest is by created_at,
  // then insertion order. A row whose record does not parse is skipped.
  std::vector<Record> latest(const std::string& protocol_hash = {});
  // Every row whose record parses, every protocol, ordered by level, problem id, sample id, then
  // newest first (created_at, then insertion order). For reports that choose among protocols.
  std::vector<StoredRow> rows();

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbv
