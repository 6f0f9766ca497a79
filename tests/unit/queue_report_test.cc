// `kbv report --queue URL` (report/queue_source.cc): the done jobs' records numbered as the run
// folder numbers its samples, from the sample id a job carries (kbv eval --run --queue sends it),
// whatever order the jobs were submitted and done in.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "queue/queue.h"
#include "report/command.h"

namespace kbv {
namespace queue_report_test {

namespace fs = std::filesystem;
using nlohmann::json;

struct Done {
  std::optional<int> sample_id;  // what the job carries
  std::string solution;          // its record's solution hash
};

// A SQLite queue holding one done job per entry, submitted (and done) in this order, for problem
// level 1 / 19; the records as a worker writes them, their sample_id left at 0 as older workers did.
std::string queue_with(const fs::path& dir, const std::vector<Done>& jobs) {
  fs::remove_all(dir);
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  std::string error;
  auto q = queue::Queue::open(url, error);
  EXPECT_NE(q, nullptr) << error;
  if (!q) return url;
  for (const Done& d : jobs) {
    queue::JobSpec spec;
    spec.problem_name = "level1/19_ReLU";
    spec.problem_source = "class Model: pass";
    spec.solution_source = "class ModelNew: pass  # " + d.solution;
    spec.sample_id = d.sample_id;
    auto id = q->submit(spec, error);
    EXPECT_TRUE(id) << error;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct submission times
    auto lease = q->lease("w", 60, error);
    EXPECT_TRUE(lease) << error;
    if (!id || !lease) continue;
    EXPECT_EQ(lease->job_id, *id);
    const json record = {{"level", 1},           {"problem_id", 19},
                         {"sample_id", 0},       {"solution_hash", d.solution},
                         {"verdict", "correct"}, {"correctness", true},
                         {"compiled", true},     {"message", "passed"},
                         {"protocol", {{"name", "kbv"}}}};
    EXPECT_TRUE(q->complete(*lease, record, error)) << error;
  }
  return url;
}

std::map<std::string, int> sample_of_solution(const std::vector<LoadedRun>& runs) {
  std::map<std::string, int> out;
  for (const auto& run : runs)
    for (const auto& r : run.records) out[r.solution_hash.value_or("")] = r.sample_id;
  return out;
}

TEST(ReportFromQueue, SamplesAreNumberedByTheSampleIdTheirJobsCarry) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_queue_report_" + std::to_string(::getpid()));
  // Submitted in another order than the run folder's (a resumed run, several submitters).
  const std::string url = queue_with(dir, {{2, "c"}, {0, "a"}, {1, "b"}});
  std::vector<std::string> warnings;
  std::string error;
  std::vector<LoadedRun> runs = load_queue(url, warnings, error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(sample_of_solution(runs), (std::map<std::string, int>{{"a", 0}, {"b", 1}, {"c", 2}}));
  ASSERT_FALSE(runs[0].notes.empty());
  EXPECT_NE(runs[0].notes[0].find("the run folder's sample ids"), std::string::npos) << runs[0].notes[0];
  fs::remove_all(dir);
}

TEST(ReportFromQueue, JobsWithoutASampleIdTakeTheLowestFreeNumbersAndTheNotesSaySo) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_queue_report_free_" + std::to_string(::getpid()));
  // kbv serve's jobs carry none: numbered in submission order around the carried ones.
  const std::string url = queue_with(dir, {{std::nullopt, "x"}, {1, "b"}, {std::nullopt, "y"}, {0, "a"}});
  std::vector<std::string> warnings;
  std::string error;
  std::vector<LoadedRun> runs = load_queue(url, warnings, error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(sample_of_solution(runs), (std::map<std::string, int>{{"a", 0}, {"b", 1}, {"x", 2}, {"y", 3}}));
  ASSERT_FALSE(runs[0].notes.empty());
  EXPECT_NE(runs[0].notes[0].find("2 of 4 job(s) carry no run folder's sample id"), std::string::npos)
      << runs[0].notes[0];
  fs::remove_all(dir);
}

}  // namespace queue_report_test
}  // namespace kbv
