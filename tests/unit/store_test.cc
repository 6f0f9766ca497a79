#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace kbv {
namespace store_test {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kbv_store_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "kbv.sqlite";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> open_store() {
    std::string error;
    auto store = Store::open(path_, error);
    EXPECT_NE(store, nullptr) << error;
    EXPECT_EQ(error, "");
    return store;
  }

  fs::path dir_;
  fs::path path_;
};

RecordKey key(int level, int problem, int sample, std::string solution = "sol",
              std::string protocol = "proto") {
  return RecordKey{level, problem, sample, std::move(solution), std::move(protocol)};
}

// A record with a key kbv does not know ("tag"): the store keeps it (record/record.h, Unknown).
Record record(int level, int problem, int sample, const std::string& tag) {
  return record_from_json({{"level", level}, {"problem_id", problem}, {"sample_id", sample}, {"tag", tag}}).record;
}

nlohmann::json tag_of(const Record& r) { return to_json(r).value("tag", nlohmann::json()); }

// Runs SQL on the file through a separate connection, as another process would.
void raw_exec(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text;
}

TEST_F(StoreTest, CreatesFileAndSchema) {
  ASSERT_FALSE(fs::exists(path_));
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_TRUE(store->latest().empty());

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(StoreTest, RecordsSurviveReopen) {
  {
    auto store = open_store();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->put(key(1, 3, 0), record(1, 3, 0, "a")), "");
    EXPECT_EQ(store->put(key(1, 3, 1), record(1, 3, 1, "b")), "");
  }
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->has(key(1, 3, 0)));
  EXPECT_TRUE(store->has(key(1, 3, 1)));
  const auto all = store->latest();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(to_json(all[0]), to_json(record(1, 3, 0, "a")));
  EXPECT_EQ(to_json(all[1]), to_json(record(1, 3, 1, "b")));
}

TEST_F(StoreTest, HasMatchesTheWholeKey) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->has(key(1, 1, 0)));
  ASSERT_EQ(store->put(key(1, 1, 0, "solA", "protoA"), record(1, 1, 0, "x")), "");
  EXPECT_TRUE(store->has(key(1, 1, 0, "solA", "protoA")));
  EXPECT_FALSE(store->has(key(1, 1, 0, "solB", "protoA")));  // other solution
  EXPECT_FALSE(store->has(key(1, 1, 0, "solA", "protoB")));  // other protocol
  EXPECT_FALSE(store->has(key(2, 1, 0, "solA", "protoA")));  // other level
  EXPECT_FALSE(store->has(key(1, 2, 0, "solA", "protoA")));  // other problem
  EXPECT_FALSE(store->has(key(1, 1, 1, "solA", "protoA")));  // other sample
}

TEST_F(StoreTest, PutReplacesSameKey) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->put(key(1, 1, 0), record(1, 1, 0, "first")), "");
  ASSERT_EQ(store->put(key(1, 1, 0), record(1, 1, 0, "second")), "");
  const auto all = store->latest();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(tag_of(all[0]), "second");

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM results", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(StoreTest, NonObjectNeverReachesTheStore) {
  // put() takes a typed Record; a JSON value that is not an object does not make one.
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  RecordRead read = record_from_json(nlohmann::json::array({1, 2}));
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.error.find("JSON object"), std::string::npos) << read.error;
  EXPECT_FALSE(store->has(key(1, 1, 0)));
}

TEST_F(StoreTest, LatestPicksNewestPerSampleAndFiltersByProtocol) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  // Inserted out of order; two solutions for (1, 2, 0) under protoA, the second one newer.
  ASSERT_EQ(store->put(key(2, 1, 0, "s", "protoA"), record(2, 1, 0, "L2")), "");
  ASSERT_EQ(store->put(key(1, 10, 0, "s", "protoA"), record(1, 10, 0, "p10")), "");
  ASSERT_EQ(store->put(key(1, 2, 1, "s", "protoA"), record(1, 2, 1, "p2s1")), "");
  ASSERT_EQ(store->put(key(1, 2, 0, "old", "protoA"), record(1, 2, 0, "old")), "");
  ASSERT_EQ(store->put(key(1, 2, 0, "new", "protoA"), record(1, 2, 0, "new")), "");
  ASSERT_EQ(store->put(key(1, 2, 0, "other", "protoB"), record(1, 2, 0, "protoB")), "");

  const auto a = store->latest("protoA");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(tag_of(a[0]), "new");
  EXPECT_EQ(tag_of(a[1]), "p2s1");
  EXPECT_EQ(tag_of(a[2]), "p10");
  EXPECT_EQ(tag_of(a[3]), "L2");

  const auto b = store->latest("protoB");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(tag_of(b[0]), "protoB");

  // All protocols: the protoB record is the newest for (1, 2, 0).
  const auto all = store->latest();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(tag_of(all[0]), "protoB");

  EXPECT_TRUE(store->latest("protoC").empty());
}

TEST_F(StoreTest, LatestOrdersByCreatedAtNotInsertion) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->put(key(1, 1, 0, "a"), record(1, 1, 0, "a")), "");
  ASSERT_EQ(store->put(key(1, 1, 0, "b"), record(1, 1, 0, "b")), "");
  // Make "a" look newer than "b", as a clock-ordered record written by another process would.
  raw_exec(path_, "UPDATE results SET created_at = created_at + 1000 WHERE solution_hash = 'a'");
  const auto all = store->latest();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(tag_of(all[0]), "a");
}

TEST_F(StoreTest, RowsKeepEveryProtocolNewestFirst) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->put(key(1, 2, 0, "old", "protoA"), record(1, 2, 0, "old")), "");
  ASSERT_EQ(store->put(key(1, 2, 0, "new", "protoB"), record(1, 2, 0, "new")), "");
  ASSERT_EQ(store->put(key(1, 1, 0, "s", "protoA"), record(1, 1, 0, "p1")), "");
  raw_exec(path_, "INSERT INTO results VALUES (1, 3, 0, 's', 'protoA', 1e12, 'not json');");
  const auto rows = store->rows();
  ASSERT_EQ(rows.size(), 3u);  // the corrupt row is skipped
  EXPECT_EQ(tag_of(rows[0].record), "p1");
  EXPECT_EQ(tag_of(rows[1].record), "new");
  EXPECT_EQ(rows[1].key.protocol_hash, "protoB");
  EXPECT_EQ(rows[1].key.solution_hash, "new");
  EXPECT_EQ(tag_of(rows[2].record), "old");
  EXPECT_GE(rows[1].created_at, rows[2].created_at);
  EXPECT_GT(rows[0].created_at, 1e9);
}

TEST_F(StoreTest, CorruptRowIsSkipped) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->put(key(1, 1, 0), record(1, 1, 0, "good")), "");
  ASSERT_EQ(store->put(key(1, 2, 0), record(1, 2, 0, "good2")), "");
  raw_exec(path_,
           "INSERT INTO results VALUES (1, 3, 0, 's', 'proto', 1e12, '{\"truncated\": ');"
           "INSERT INTO results VALUES (1, 2, 0, 'x', 'proto', 1e12, 'not json at all');");
  const auto all = store->latest("proto");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(tag_of(all[0]), "good");
  // The corrupt newest row of (1, 2, 0) is skipped; the older good one stands.
  EXPECT_EQ(tag_of(all[1]), "good2");
}

TEST_F(StoreTest, NotADatabaseIsAnError) {
  const std::string text = "this is a text file, not a database\n";
  {
    std::ofstream out(path_);
    for (int i = 0; i < 20; ++i) out << text;
  }
  std::string error;
  auto store = Store::open(path_, error);
  EXPECT_EQ(store, nullptr);
  EXPECT_NE(error.find(path_.string() + ": cannot open results store"), std::string::npos)
      << error;
  EXPECT_NE(error.find("not a database"), std::string::npos) << error;
  // The file is left as it was.
  EXPECT_EQ(fs::file_size(path_), 20 * text.size());
}

TEST_F(StoreTest, UnwritablePathIsAnError) {
  const fs::path missing = dir_ / "no_such_folder" / "kbv.sqlite";
  std::string error;
  auto store = Store::open(missing, error);
  EXPECT_EQ(store, nullptr);
  EXPECT_EQ(error, missing.string() + ": cannot open results store: unable to open database file");

  // A folder in place of the file.
  fs::create_directories(path_);
  store = Store::open(path_, error);
  EXPECT_EQ(store, nullptr);
  EXPECT_NE(error.find(path_.string() + ": cannot open results store: "), std::string::npos)
      << error;
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
  { ASSERT_NE(open_store(), nullptr); }
  raw_exec(path_, "PRAGMA user_version = 99");
  std::string error;
  auto store = Store::open(path_, error);
  EXPECT_EQ(store, nullptr);
  EXPECT_NE(error.find("schema version 99"), std::string::npos) << error;
}

TEST_F(StoreTest, TwoConnectionsShareTheFile) {
  auto first = open_store();
  auto second = open_store();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(first->put(key(1, 1, 0), record(1, 1, 0, "one")), "");
  ASSERT_EQ(second->put(key(1, 1, 1), record(1, 1, 1, "two")), "");
  EXPECT_TRUE(second->has(key(1, 1, 0)));
  EXPECT_EQ(first->latest().size(), 2u);
}

}  // namespace store_test
}  // namespace kbv

namespace kbv {
namespace store_test {

class StoreDamage : public StoreTest {};

TEST_F(StoreDamage, ACorruptedFileIsSaidToBeDamagedNotEmpty) {
  {
    auto store = open_store();
    ASSERT_NE(store, nullptr);
    // Enough rows (with long text) to fill interior pages of the table and its index.
    for (int i = 0; i < 400; ++i)
      ASSERT_EQ(store->put(key(1, i, 0),
                           record_from_json({{"level", 1}, {"problem_id", i}, {"pad", std::string(300, 'x')}}).record), "");
  }  // the last connection checkpoints the WAL into the file
  const auto size = fs::file_size(path_);
  ASSERT_GT(size, 16u * 4096u);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    // Pages 3 to 10 (a page is 4096 bytes; page 1 holds the header): garbage.
    std::string garbage(8 * 4096, '\x5a');
    f.seekp(2 * 4096);
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  for (Store::Mode mode : {Store::Mode::read_write, Store::Mode::read_only}) {
    std::string error;
    auto store = Store::open(path_, error, mode);
    EXPECT_EQ(store, nullptr);
    EXPECT_NE(error.find("the results store is damaged"), std::string::npos) << error;
    EXPECT_NE(error.find(path_.string()), std::string::npos) << error;
  }
}

TEST_F(StoreDamage, ReadOnlyNeitherCreatesNorWrites) {
  std::string error;
  EXPECT_EQ(Store::open(path_, error, Store::Mode::read_only), nullptr);
  EXPECT_FALSE(fs::exists(path_));
  {
    auto store = open_store();
    ASSERT_EQ(store->put(key(1, 1, 0), record(1, 1, 0, "a")), "");
  }
  auto before = fs::last_write_time(path_);
  auto store = Store::open(path_, error, Store::Mode::read_only);
  ASSERT_NE(store, nullptr) << error;
  EXPECT_EQ(store->latest().size(), 1u);
  EXPECT_EQ(store->rows().size(), 1u);
  EXPECT_TRUE(store->has(key(1, 1, 0)));
  std::string e = store->put(key(1, 2, 0), record(1, 2, 0, "b"));
  EXPECT_NE(e.find("read-only"), std::string::npos) << e;
  EXPECT_EQ(fs::last_write_time(path_), before);
}

}  // namespace store_test
}  // namespace kbv
