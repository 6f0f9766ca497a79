// The leaderboard's model, tokens and cost come from `kbv generate`'s response records.
#include "report/generation.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>

namespace kbv {
namespace generation_report_test {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kbv-generation-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(GenerationSummary, SumsTokensAndCostOverTheResponseRecords) {
  fs::path d = fresh_dir("sums");
  std::ofstream(d / "level_1_problem_1_sample_0_response.json")
      << R"({"status":"ok","model":"m-large","prompt_tokens":1000,"completion_tokens":300,"cost_usd":0.01})";
  std::ofstream(d / "level_1_problem_2_sample_0_response.json")
      << R"({"status":"ok","model":"m-large","prompt_tokens":1100,"completion_tokens":200,"cost_usd":null})";
  std::ofstream(d / "level_1_problem_3_sample_0_response.json")
      << R"({"status":"request_failed","model":"m-small","prompt_tokens":null,"completion_tokens":null})";
  std::ofstream(d / "level_1_problem_4_sample_0_response.json") << "{truncated";
  std::ofstream(d / "level_1_problem_1_sample_0_kernel.py") << "x = 1\n";
  std::ofstream(d / "notes.json") << R"({"model":"not a response record","cost_usd":99})";
  GenerationSummary g = read_generation(d);
  EXPECT_EQ(g.records, 3);
  EXPECT_EQ(g.models, (std::vector<std::string>{"m-large", "m-small"}));
  EXPECT_EQ(g.prompt_tokens, 2100);
  EXPECT_EQ(g.completion_tokens, 500);
  EXPECT_EQ(g.with_tokens, 2);
  EXPECT_DOUBLE_EQ(g.cost_usd, 0.01);
  EXPECT_EQ(g.with_cost, 1);
  ASSERT_EQ(g.unreadable.size(), 1u);
  EXPECT_NE(g.unreadable[0].find("level_1_problem_4_sample_0_response.json"), std::string::npos) << g.unreadable[0];
  fs::remove_all(d);
}

TEST(GenerationSummary, NoRecordsInAFolderKbvGenerateDidNotWrite) {
  fs::path d = fresh_dir("none");
  std::ofstream(d / "level_1_problem_1_sample_0_kernel.py") << "x = 1\n";
  GenerationSummary g = read_generation(d);
  EXPECT_EQ(g.records, 0);
  EXPECT_TRUE(g.models.empty());
  EXPECT_EQ(read_generation(d / "absent").records, 0);
  fs::remove_all(d);
}

}  // namespace generation_report_test
}  // namespace kbv
