// Sealed cache entries (src/store/sealed.h): what kbv wrote reads back; anything else is refused.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/sealed.h"
#include "util/fs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace sealed_test {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kbv-sealed-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Sealed, WhatKbvWroteReadsBackWithoutItsSeal) {
  fs::path dir = fresh_dir("roundtrip");
  kbv::SealKey key = kbv::seal_key(dir);
  ASSERT_TRUE(key.error.empty()) << key.error;
  ASSERT_EQ(key.bytes.size(), 32u);
  json entry = {{"stats", {{"median_ms", 1.25}, {"samples", 40}}}, {"mode", "tf32"}};
  ASSERT_EQ(kbv::write_sealed(dir / "baselines" / "k.json", entry, key.bytes), "");
  kbv::Unsealed u = kbv::read_sealed(dir / "baselines" / "k.json", key.bytes);
  ASSERT_EQ(u.check, kbv::Unsealed::Check::ok) << u.reason;
  EXPECT_EQ(u.value, entry);
  // The key is private to kbv's user, and the same on the next open.
  struct stat st {};
  ASSERT_EQ(::stat((dir / ".seal-key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(kbv::seal_key(dir).bytes, key.bytes);
  EXPECT_EQ(kbv::read_sealed(dir / "absent.json", key.bytes).check, kbv::Unsealed::Check::absent);
}

TEST(Sealed, AnEditedUnsealedOrForeignEntryIsRefusedWithTheReason) {
  fs::path dir = fresh_dir("refused");
  const std::string key = kbv::seal_key(dir).bytes;
  ASSERT_FALSE(key.empty());
  const fs::path path = dir / "calibration.json";
  ASSERT_EQ(kbv::write_sealed(path, json{{"bandwidth_bytes_per_s", 2.0e10}}, key), "");

  // A candidate's edit: a huge bandwidth, seal kept.
  json edited = json::parse(kbv::read_file(path).text);
  edited["bandwidth_bytes_per_s"] = 1.0e15;
  ASSERT_EQ(kbv::write_file_atomic(path, edited.dump(1)), "");
  kbv::Unsealed u = kbv::read_sealed(path, key);
  EXPECT_EQ(u.check, kbv::Unsealed::Check::refused);
  EXPECT_NE(u.reason.find("does not match"), std::string::npos) << u.reason;
  EXPECT_NE(u.reason.find(path.string()), std::string::npos) << u.reason;

  // No seal at all (an old kbv's entry, or a hand-made one).
  ASSERT_EQ(kbv::write_file_atomic(path, R"({"bandwidth_bytes_per_s": 1e15})"), "");
  u = kbv::read_sealed(path, key);
  EXPECT_EQ(u.check, kbv::Unsealed::Check::refused);
  EXPECT_NE(u.reason.find("no seal"), std::string::npos) << u.reason;

  // Sealed under another cache's key.
  fs::path other = fresh_dir("other");
  ASSERT_EQ(kbv::write_sealed(path, json{{"bandwidth_bytes_per_s", 1.0e15}}, kbv::seal_key(other).bytes), "");
  EXPECT_EQ(kbv::read_sealed(path, key).check, kbv::Unsealed::Check::refused);

  // A seal computed with the right algorithm but a guessed key.
  json forged = {{"bandwidth_bytes_per_s", 1.0e15}};
  forged["seal"] = kbv::seal_of(forged, std::string(32, '\0'));
  ASSERT_EQ(kbv::write_file_atomic(path, forged.dump()), "");
  EXPECT_EQ(kbv::read_sealed(path, key).check, kbv::Unsealed::Check::refused);

  // Not JSON.
  ASSERT_EQ(kbv::write_file_atomic(path, "{\"bandwidth"), "");
  EXPECT_EQ(kbv::read_sealed(path, key).check, kbv::Unsealed::Check::refused);
}

TEST(Sealed, ConcurrentFirstUsesAgreeOnOneKey) {
  fs::path dir = fresh_dir("race");
  std::vector<std::string> keys(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < keys.size(); ++i) threads.emplace_back([&, i] { keys[i] = kbv::seal_key(dir).bytes; });
  for (auto& t : threads) t.join();
  for (const auto& k : keys) EXPECT_EQ(k, keys[0]);
  EXPECT_EQ(keys[0].size(), 32u);
}

TEST(Sealed, AKeyFileOfTheWrongSizeIsAnErrorNamingIt) {
  fs::path dir = fresh_dir("short");
  ASSERT_EQ(kbv::write_file_atomic(dir / ".seal-key", "short"), "");
  kbv::SealKey k = kbv::seal_key(dir);
  EXPECT_TRUE(k.bytes.empty());
  EXPECT_NE(k.error.find(".seal-key"), std::string::npos) << k.error;
}

}  // namespace sealed_test
