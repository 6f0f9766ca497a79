// A run folder as `kbv generate` writes it, evaluated by `kbv eval --run`: a sample whose answer
// had no code block is a failed sample in the results, never skipped.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"
#include "util/fs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace generate_eval_test {

using kbv::e2e::kSource;

TEST(GeneratedRun, AnswerWithoutCodeIsAFailedSample) {
  fs::path run = kbv::e2e::scratch_dir("generated", "run");
  fs::create_directories(run / "prompts");
  // Sample 0: code extracted, its raw answer and sidecar beside it.
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_identity.py", run / "level_1_problem_19_sample_0_kernel.py");
  std::ofstream(run / "level_1_problem_19_sample_0_response.md") << "```python\nx = 1\n```\n";
  std::ofstream(run / "level_1_problem_19_sample_0_response.json") << R"({"status": "ok"})";
  // Sample 1: the answer had no code block.
  std::ofstream(run / "level_1_problem_19_sample_1_response.md") << "Sorry, I cannot write that kernel.\n";
  std::ofstream(run / "level_1_problem_19_sample_1_response.json") << R"({"status": "no_code_block"})";

  kbv::e2e::Outcome r = kbv::e2e::run_kbv({"eval", "--problems", (kSource / "problems").string(), "--run", run.string(),
                                           "--level", "1", "--device", "cpu", "--trials", "1"},
                                          {}, 600);
  const std::string& output = r.output;
  ASSERT_EQ(r.code, 0) << output;
  EXPECT_EQ(output.find("same sample"), std::string::npos) << output;
  EXPECT_NE(output.find("2 sample(s) to evaluate"), std::string::npos) << output;

  json results = json::parse(kbv::read_file(run / "eval_results.json").text, nullptr, false);
  ASSERT_TRUE(results.is_object()) << output;
  ASSERT_EQ(results["19"].size(), 2u) << results.dump(2);
  const json& no_code = results["19"][1];
  EXPECT_EQ(no_code["sample_id"], 1);
  EXPECT_EQ(no_code["compiled"], false);
  EXPECT_EQ(no_code["correctness"], false);
  std::string message = no_code["metadata"].dump();
  EXPECT_NE(message.find("level_1_problem_19_sample_1_response.md: no fenced code block"), std::string::npos)
      << message;
  EXPECT_EQ(results["19"][0]["compiled"], true);
  fs::remove_all(run);
}

}  // namespace generate_eval_test
