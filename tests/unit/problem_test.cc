// Problem and solution discovery in KernelBench layouts; code extraction from raw answers.
#include "problem/problem.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace kbv {
namespace problem_test {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class ProblemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("kbv_problem_test_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes `text` to dir_/relative, creating folders on the way.
  fs::path write(const std::string& relative, const std::string& text = "# problem\n") {
    fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  static std::vector<std::string> names(const Discovery& d) {
    std::vector<std::string> out;
    for (const ProblemRef& p : d.problems) out.push_back(p.name);
    return out;
  }

  static bool any_contains(const std::vector<std::string>& lines, const std::string& a,
                           const std::string& b = "") {
    for (const std::string& line : lines)
      if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
    return false;
  }

  fs::path dir_;
};

// ---------------------------------------------------------------------------
// Problem ids.

TEST(ParseProblemId, DigitsBeforeTheFirstUnderscore) {
  EXPECT_EQ(parse_problem_id("26_GELU_.py"), 26);
  EXPECT_EQ(parse_problem_id("1_Square_matrix_multiplication_.py"), 1);
  EXPECT_EQ(parse_problem_id("100_HingeLoss.py"), 100);
  EXPECT_EQ(parse_problem_id("007_Leading_zeros.py"), 7);
}

TEST(ParseProblemId, RejectsNamesWithoutALeadingNumber) {
  EXPECT_EQ(parse_problem_id("__init__.py"), std::nullopt);
  EXPECT_EQ(parse_problem_id("helpers.py"), std::nullopt);
  EXPECT_EQ(parse_problem_id("12abc_Model.py"), std::nullopt);
  EXPECT_EQ(parse_problem_id("_1_Model.py"), std::nullopt);
  EXPECT_EQ(parse_problem_id("26.py"), std::nullopt);
  EXPECT_EQ(parse_problem_id("99999999999_TooBig.py"), std::nullopt);
  EXPECT_EQ(parse_problem_id(""), std::nullopt);
}

// ---------------------------------------------------------------------------
// Dataset discovery.

TEST_F(ProblemTest, DatasetKeepsQuirkyNamesVerbatimAndSortsByLevelThenId) {
  write("level1/26_GELU_.py");
  write("level1/1_Square_matrix_multiplication_.py");
  write("level1/100_HingeLoss.py");
  write("level1/2_Standard_matrix_multiplication_.py");
  write("level2/1_Conv2D_ReLU_BiasAdd.py");

  Discovery d = discover_dataset(dir_);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(names(d),
            (std::vector<std::string>{"1_Square_matrix_multiplication_.py",
                                      "2_Standard_matrix_multiplication_.py", "26_GELU_.py",
                                      "100_HingeLoss.py", "1_Conv2D_ReLU_BiasAdd.py"}));
  ASSERT_EQ(d.problems.size(), 5u);
  EXPECT_EQ(d.problems[2].level, 1);
  EXPECT_EQ(d.problems[2].id, 26);
  EXPECT_EQ(d.problems[2].path, dir_ / "level1" / "26_GELU_.py");
  EXPECT_EQ(d.problems[4].level, 2);
  EXPECT_EQ(d.problems[4].id, 1);
  EXPECT_TRUE(d.warnings.empty());
}

TEST_F(ProblemTest, DatasetSearchesNestedSubfolders) {
  write("level3/1_MLP.py");
  write("level3/extra/deeper/44_MiniGPTBlock.py");
  write("level3/extra/9_ResNet18.py");

  Discovery d = discover_dataset(dir_);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(names(d),
            (std::vector<std::string>{"1_MLP.py", "9_ResNet18.py", "44_MiniGPTBlock.py"}));
  EXPECT_EQ(d.problems[2].path, dir_ / "level3/extra/deeper/44_MiniGPTBlock.py");
  EXPECT_EQ(d.problems[2].level, 3);
}

TEST_F(ProblemTest, DatasetIgnoresFilesThatAreNotProblems) {
  write("level1/19_ReLU.py");
  write("level1/__init__.py");
  write("level1/README.md");
  write("level1/19_ReLU.pyc");
  write("level1/__pycache__/20_LeakyReLU.cpython-312.py");
  write("level1/.ipynb_checkpoints/19_ReLU-checkpoint.py");
  write("level1/.hidden_19_ReLU.py");
  write("level1/helpers.py");
  write("notes/5_NotALevel.py");      // not under a level folder
  write("level_1/6_WrongFolder.py");  // "level_1" is not "level<N>"
  write("levelx/7_WrongFolder.py");

  Discovery d = discover_dataset(dir_);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(names(d), (std::vector<std::string>{"19_ReLU.py"}));
  // A .py file without an id is reported (it may be a misnamed problem); the rest are silent.
  ASSERT_EQ(d.warnings.size(), 1u) << ::testing::PrintToString(d.warnings);
  EXPECT_EQ(d.warnings[0], "level1/helpers.py: no numeric id before the first '_'; skipped");
}

TEST_F(ProblemTest, DatasetDuplicateIdKeepsTheFirstInPathOrderAndWarns) {
  write("level1/3_Batched_matrix_multiplication.py");
  write("level1/sub/3_Other.py");
  write("level1/4_Matrix_vector_multiplication_.py");

  Discovery d = discover_dataset(dir_);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(names(d), (std::vector<std::string>{"3_Batched_matrix_multiplication.py",
                                                "4_Matrix_vector_multiplication_.py"}));
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0],
            "level1/3_Batched_matrix_multiplication.py and level1/sub/3_Other.py both have id 3; "
            "keeping the first");
}

TEST_F(ProblemTest, DatasetSameIdInDifferentLevelsIsNotADuplicate) {
  write("level1/1_Square_matrix_multiplication_.py");
  write("level2/1_Conv2D_ReLU_BiasAdd.py");
  Discovery d = discover_dataset(dir_);
  EXPECT_EQ(d.problems.size(), 2u);
  EXPECT_TRUE(d.warnings.empty());
}

TEST_F(ProblemTest, DatasetLevelFilter) {
  write("level1/1_Square_matrix_multiplication_.py");
  write("level2/1_Conv2D_ReLU_BiasAdd.py");
  write("level2/2_ConvTranspose2d_BiasAdd_Clamp.py");
  write("level3/1_MLP.py");

  Discovery d = discover_dataset(dir_, 2);
  ASSERT_EQ(d.error, "");
  ASSERT_EQ(d.problems.size(), 2u);
  for (const ProblemRef& p : d.problems) EXPECT_EQ(p.level, 2);

  Discovery missing = discover_dataset(dir_, 4);
  EXPECT_TRUE(missing.problems.empty());
  EXPECT_NE(missing.error.find(dir_.string()), std::string::npos) << missing.error;
  EXPECT_NE(missing.error.find("no level4 folder found"), std::string::npos) << missing.error;
  EXPECT_NE(missing.error.find("level1, level2, level3"), std::string::npos) << missing.error;
}

TEST_F(ProblemTest, DatasetLevelsSortNumerically) {
  write("level10/1_A.py");
  write("level2/1_B.py");
  Discovery d = discover_dataset(dir_);
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_EQ(d.problems[0].level, 2);
  EXPECT_EQ(d.problems[1].level, 10);
}

TEST_F(ProblemTest, DatasetMissingRootIsAnErrorNamingThePath) {
  fs::path root = dir_ / "does_not_exist";
  Discovery d = discover_dataset(root);
  EXPECT_TRUE(d.problems.empty());
  EXPECT_NE(d.error.find(root.string()), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("expected a KernelBench dataset root like "
                         "KernelBench/level1/1_Square_matrix_multiplication_.py"),
            std::string::npos)
      << d.error;
}

TEST_F(ProblemTest, DatasetRootThatIsAFileIsAnError) {
  fs::path file = write("1_Square_matrix_multiplication_.py");
  Discovery d = discover_dataset(file);
  EXPECT_NE(d.error.find(file.string() + ": not a directory"), std::string::npos) << d.error;
}

TEST_F(ProblemTest, DatasetRootWithoutLevelFolder) {
  write("problems/1_Square_matrix_multiplication_.py");
  Discovery d = discover_dataset(dir_);
  EXPECT_TRUE(d.problems.empty());
  EXPECT_EQ(d.error, dir_.string() +
                         ": no level<N> folder found; expected a KernelBench dataset root like "
                         "KernelBench/level1/1_Square_matrix_multiplication_.py");
}

TEST_F(ProblemTest, DatasetRootHintsAtTheKernelBenchFolderInsideARepository) {
  // The user passed the KernelBench repository instead of its KernelBench/ dataset folder.
  write("KernelBench/level1/1_Square_matrix_multiplication_.py");
  Discovery d = discover_dataset(dir_);
  EXPECT_NE(d.error.find("no level<N> folder found"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("did you mean " + (dir_ / "KernelBench").string()), std::string::npos)
      << d.error;
}

TEST_F(ProblemTest, DatasetRootHintsWhenALevelFolderIsPassed) {
  write("level1/1_Square_matrix_multiplication_.py");
  Discovery d = discover_dataset(dir_ / "level1");
  EXPECT_NE(d.error.find("is itself a level folder"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find(dir_.string()), std::string::npos) << d.error;
}

TEST_F(ProblemTest, DatasetWithOnlyEmptyLevelFoldersIsAnError) {
  fs::create_directories(dir_ / "level1");
  write("level1/README.md");
  Discovery d = discover_dataset(dir_);
  EXPECT_TRUE(d.problems.empty());
  EXPECT_NE(d.error.find("no problem files"), std::string::npos) << d.error;
}

// ---------------------------------------------------------------------------
// Run folder discovery.

TEST_F(ProblemTest, RunFolderParsesSamplesAndSortsNumerically) {
  write("level_1_problem_10_sample_0_kernel.py");
  write("level_1_problem_2_sample_1_kernel.py");
  write("level_1_problem_2_sample_0_kernel.py");
  write("level_2_problem_1_sample_0_kernel.md", "```python\nx = 1\n```\n");
  write("level_1_problem_3_sample_0_kernel.txt", "```\nx = 1\n```\n");

  RunDiscovery r = discover_run(dir_);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.samples.size(), 5u);
  auto key = [](const SampleRef& s) {
    return std::vector<int>{s.level, s.problem_id, s.sample_id};
  };
  EXPECT_EQ(key(r.samples[0]), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(key(r.samples[1]), (std::vector<int>{1, 2, 1}));
  EXPECT_EQ(key(r.samples[2]), (std::vector<int>{1, 3, 0}));
  EXPECT_EQ(key(r.samples[3]), (std::vector<int>{1, 10, 0}));
  EXPECT_EQ(key(r.samples[4]), (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(r.samples[2].path, dir_ / "level_1_problem_3_sample_0_kernel.txt");
  EXPECT_EQ(r.samples[4].path, dir_ / "level_2_problem_1_sample_0_kernel.md");
  EXPECT_TRUE(r.warnings.empty());
}

TEST_F(ProblemTest, RunFolderIgnoresOtherFilesAndListsSolutionsNotNamedAsSamples) {
  write("level_1_problem_1_sample_0_kernel.py");
  write("eval_results.json", "{}");
  write("generation_config.yaml");
  write("level_1_problem_1_sample_0_kernel.py.bak");
  write("level_1_problem_1_sample_0.py");
  write("level_1_problem_1_sample_0_kernel.cu");
  write("level_1_problem_x_sample_0_kernel.py");
  write("Level_1_problem_2_sample_0_kernel.py");
  write("nested/level_1_problem_5_sample_0_kernel.py");  // only files directly in the folder

  RunDiscovery r = discover_run(dir_);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].problem_id, 1);
  // Data, configs, backups and .cu files pass silently; Python files that miss the layout are
  // listed, so a user sees why they were not evaluated.
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "3 file(s) ignored, not named level_<L>_problem_<P>_sample_<S>_kernel.py: Level_1_problem_2_sample_0_kernel.py, "
            "level_1_problem_1_sample_0.py, level_1_problem_x_sample_0_kernel.py");
}

TEST_F(ProblemTest, RunFolderWithOnlyMisnamedSolutionsNamesThem) {
  write("relu_sample0.py");
  write("level1_problem19_sample0_kernel.py");
  write("level_1_problem_19_kernel.py");
  RunDiscovery r = discover_run(dir_);
  EXPECT_TRUE(r.samples.empty());
  EXPECT_NE(r.error.find("(3 other file(s), not named so: level1_problem19_sample0_kernel.py, "
                         "level_1_problem_19_kernel.py, relu_sample0.py)"),
            std::string::npos)
      << r.error;
}

TEST_F(ProblemTest, RunFolderPrefersPyOverRawAnswerAndWarns) {
  write("level_1_problem_1_sample_0_kernel.py");
  write("level_1_problem_1_sample_0_kernel.md", "```python\nx = 1\n```\n");

  RunDiscovery r = discover_run(dir_);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].path, dir_ / "level_1_problem_1_sample_0_kernel.py");
  ASSERT_EQ(r.warnings.size(), 1u) << ::testing::PrintToString(r.warnings);
  EXPECT_TRUE(any_contains(r.warnings, "level_1_problem_1_sample_0_kernel.py",
                           "level_1_problem_1_sample_0_kernel.md"))
      << r.warnings[0];
  EXPECT_TRUE(any_contains(r.warnings, "using level_1_problem_1_sample_0_kernel.py"))
      << r.warnings[0];
}

// `kbv generate` keeps the raw answer beside the extracted code; a sample whose answer had no
// code block has only the raw answer, which then stands for the sample (and fails to load).
TEST_F(ProblemTest, RunFolderUsesGeneratedRawAnswerOnlyWhenNoKernelFile) {
  write("level_1_problem_1_sample_0_kernel.py");
  write("level_1_problem_1_sample_0_response.md", "```python\nx = 1\n```\n");
  write("level_1_problem_1_sample_1_response.md", "I cannot help with that.\n");
  write("level_1_problem_1_sample_1_response.json", "{}");
  write("level_1_problem_1_sample_2_response.txt", "ignored\n");

  RunDiscovery r = discover_run(dir_);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].path, dir_ / "level_1_problem_1_sample_0_kernel.py");
  EXPECT_EQ(r.samples[1].sample_id, 1);
  EXPECT_EQ(r.samples[1].path, dir_ / "level_1_problem_1_sample_1_response.md");
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(r.warnings);

  SolutionSource s = load_solution(r.samples[1].path);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find("level_1_problem_1_sample_1_response.md: no fenced code block"), std::string::npos)
      << s.error;
}

TEST_F(ProblemTest, RunFolderLevelFilter) {
  write("level_1_problem_1_sample_0_kernel.py");
  write("level_2_problem_1_sample_0_kernel.py");
  write("level_2_problem_7_sample_3_kernel.md", "```\nx\n```\n");

  RunDiscovery r = discover_run(dir_, 2);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].level, 2);
  EXPECT_EQ(r.samples[1].problem_id, 7);
  EXPECT_EQ(r.samples[1].sample_id, 3);

  RunDiscovery none = discover_run(dir_, 3);
  EXPECT_TRUE(none.samples.empty());
  EXPECT_NE(none.error.find("no samples of level 3"), std::string::npos) << none.error;
}

TEST_F(ProblemTest, RunFolderErrorsNameThePath) {
  fs::path missing = dir_ / "runs" / "nope";
  RunDiscovery r = discover_run(missing);
  EXPECT_NE(r.error.find(missing.string()), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("level_1_problem_1_sample_0_kernel.py"), std::string::npos) << r.error;

  write("eval_results.json", "{}");
  RunDiscovery empty = discover_run(dir_);
  EXPECT_TRUE(empty.samples.empty());
  EXPECT_NE(empty.error.find(dir_.string()), std::string::npos) << empty.error;
  EXPECT_NE(empty.error.find("no level_<L>_problem_<P>_sample_<S>_kernel.py files"),
            std::string::npos)
      << empty.error;

  fs::path file = write("level_1_problem_1_sample_0_kernel.py");
  EXPECT_NE(discover_run(file).error.find("not a directory"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Code extraction.

TEST(ExtractCode, StripsTheLanguageTag) {
  Extraction e = extract_code(
      "Here is the optimized kernel:\n"
      "\n"
      "```python\n"
      "import torch\n"
      "class ModelNew(torch.nn.Module):\n"
      "    pass\n"
      "```\n"
      "It fuses the two ops.\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n");
  EXPECT_EQ(e.language_tag, "python");
  EXPECT_EQ(e.block_index, 0);
  EXPECT_EQ(e.block_count, 1);
  EXPECT_EQ(e.first_line, 4);
}

TEST(ExtractCode, TagsAreCaseInsensitive) {
  for (std::string tag : {"Python", "PY", "cpp", "C++", "cuda", "c"}) {
    Extraction e = extract_code("```" + tag + "\nx = 1\n```\n");
    ASSERT_TRUE(e.found) << tag;
    EXPECT_EQ(e.code, "x = 1\n") << tag;
    EXPECT_FALSE(e.language_tag.empty()) << tag;
  }
  EXPECT_EQ(extract_code("```CUDA\nx\n```").language_tag, "cuda");
}

TEST(ExtractCode, NoTag) {
  Extraction e = extract_code("```\nimport torch\n```");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "import torch\n");
  EXPECT_EQ(e.language_tag, "");
  EXPECT_EQ(e.first_line, 2);
}

TEST(ExtractCode, TextAfterTheFenceThatIsNotATagIsCode) {
  // KernelBench only strips known tags; anything else after ``` stays part of the code.
  Extraction e = extract_code("```import torch\nx = 1\n```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "import torch\nx = 1\n");
  EXPECT_EQ(e.language_tag, "");
  EXPECT_EQ(e.first_line, 1);
}

TEST(ExtractCode, AClosingFenceGluedToTheLastLineEndsTheBlock) {
  // KernelBench's extractor ends the block at the first ``` after the opening one, so answers
  // like this one are taken upstream; the code before the fence is the block's last line.
  Extraction e = extract_code("```python\ndef get_inputs():\n    return []```\nSome prose.\n```\nx = 2\n```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "def get_inputs():\n    return []\n");
  EXPECT_EQ(e.language_tag, "python");
  EXPECT_EQ(e.block_count, 2);
  // Trailing blanks after the glued fence, and a longer run, close it too.
  EXPECT_EQ(extract_code("```\nx = 1``` \t\n").code, "x = 1\n");
  EXPECT_EQ(extract_code("````\nx = 1````\n").code, "x = 1\n");
  // A run shorter than the opening fence does not.
  Extraction shorter = extract_code("````\nx = 1```\ny = 2\n````\n");
  EXPECT_EQ(shorter.code, "x = 1```\ny = 2\n");
}

TEST(ExtractCode, TwoBlocksTakesTheFirst) {
  Extraction e = extract_code(
      "First the kernel:\n"
      "```python\n"
      "first = 1\n"
      "```\n"
      "and a test:\n"
      "```python\n"
      "second = 2\n"
      "```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "first = 1\n");
  EXPECT_EQ(e.block_index, 0);
  EXPECT_EQ(e.block_count, 2);
  EXPECT_EQ(e.first_line, 3);
}

TEST(ExtractCode, ReasoningSectionIsSkipped) {
  Extraction e = extract_code(
      "<think>\n"
      "Let me try a naive version first:\n"
      "```python\n"
      "draft = 1\n"
      "```\n"
      "That is slow.\n"
      "</think>\n"
      "Final answer:\n"
      "```python\n"
      "final = 2\n"
      "```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "final = 2\n");
  EXPECT_EQ(e.block_count, 1);
  EXPECT_EQ(e.block_index, 0);
  EXPECT_EQ(e.skipped_in_reasoning, 1);
  EXPECT_EQ(e.first_line, 10);
}

TEST(ExtractCode, LoneClosingTagEndsTheReasoning) {
  // The chat template put <think> in the prompt, so the answer only has the closing tag.
  Extraction e = extract_code("```\ndraft\n```\nhmm</think>```python\nfinal\n```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "final\n");
  EXPECT_EQ(e.skipped_in_reasoning, 1);
  EXPECT_EQ(e.first_line, 5);
}

TEST(ExtractCode, ReasoningOnOneLine) {
  Extraction e = extract_code("<think>plan: fuse ```x``` ops</think>\n```python\nx = 1\n```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "x = 1\n");
  EXPECT_EQ(e.first_line, 3);
  EXPECT_EQ(e.block_count, 1);
}

TEST(ExtractCode, UnclosedBlockInsideReasoningEndsWithIt) {
  Extraction e = extract_code("<think>\n```python\ndraft\n</think>\n```python\nfinal\n```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "final\n");
  EXPECT_EQ(e.first_line, 6);
}

TEST(ExtractCode, OnlyReasoningBlocksIsNotFound) {
  Extraction e = extract_code("<think>\n```python\ndraft\n```\n</think>\nI give up.\n");
  EXPECT_FALSE(e.found);
  EXPECT_EQ(e.block_count, 0);
  EXPECT_EQ(e.skipped_in_reasoning, 1);
}

TEST(ExtractCode, UnterminatedFenceTakesTheRestOfTheText) {
  Extraction e = extract_code("Answer:\n```python\nimport torch\nx = 1\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "import torch\nx = 1\n");
  EXPECT_EQ(e.block_count, 1);
  EXPECT_EQ(e.first_line, 3);
}

TEST(ExtractCode, NoBlock) {
  Extraction e = extract_code("I cannot write this kernel. Use torch.matmul.");
  EXPECT_FALSE(e.found);
  EXPECT_EQ(e.block_count, 0);
  EXPECT_EQ(e.block_index, -1);
  EXPECT_EQ(e.code, "");
  EXPECT_FALSE(extract_code("").found);
  EXPECT_FALSE(extract_code("inline ``code`` only").found);
}

TEST(ExtractCode, BlankLinesAroundTheCodeAreDropped) {
  Extraction e = extract_code("```python\n\n\nx = 1\n\n```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "x = 1\n");
  EXPECT_EQ(e.first_line, 4);
}

TEST(ExtractCode, WindowsLineEndings) {
  Extraction e = extract_code("Answer:\r\n```python\r\nx = 1\r\ny = 2\r\n```\r\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "x = 1\ny = 2\n");
  EXPECT_EQ(e.language_tag, "python");
}

TEST(ExtractCode, IndentedFenceIsDedented) {
  Extraction e = extract_code("1. The code:\n   ```python\n   def f():\n       return 1\n   ```\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "def f():\n    return 1\n");
}

TEST(ExtractCode, LongerFenceMayContainShorterOnes) {
  Extraction e = extract_code("````python\ndoc = '''\n```\nnot a fence\n'''\n````\n");
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.code, "doc = '''\n```\nnot a fence\n'''\n");
  EXPECT_EQ(e.block_count, 1);
}

// ---------------------------------------------------------------------------
// Loading solutions.

TEST_F(ProblemTest, LoadSolutionReadsPyAsIs) {
  std::string text = "import torch\n# ```python is just a comment here\nclass ModelNew: pass\n";
  fs::path path = write("level_1_problem_1_sample_0_kernel.py", text);
  SolutionSource s = load_solution(path);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.code, text);
  EXPECT_EQ(s.origin, "file");
  EXPECT_EQ(s.error, "");
}

TEST_F(ProblemTest, LoadSolutionExtractsFromMarkdown) {
  fs::path path = write("level_1_problem_1_sample_0_kernel.md",
                        "# Plan\n"
                        "\n"
                        "Fuse GELU into one kernel.\n"
                        "```python\n"
                        "import torch\n"
                        "```\n"
                        "```python\n"
                        "print('test')\n"
                        "```\n");
  SolutionSource s = load_solution(path);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.code, "import torch\n");
  EXPECT_EQ(s.origin, "markdown block 1 of 2 (python), line 5");
}

TEST_F(ProblemTest, LoadSolutionExtractsFromTxtWithoutTag) {
  fs::path path = write("level_1_problem_1_sample_0_kernel.txt", "```\nx = 1\n```\n");
  SolutionSource s = load_solution(path);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.code, "x = 1\n");
  EXPECT_EQ(s.origin, "markdown block 1 of 1, line 2");
}

TEST_F(ProblemTest, LoadSolutionMissingFile) {
  fs::path path = dir_ / "level_1_problem_1_sample_0_kernel.py";
  SolutionSource s = load_solution(path);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.code, "");
  EXPECT_EQ(s.error.rfind("cannot read " + path.string() + ": ", 0), 0u) << s.error;
}

TEST_F(ProblemTest, LoadSolutionDirectory) {
  SolutionSource s = load_solution(dir_);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error, "cannot read " + dir_.string() + ": Is a directory");
}

TEST_F(ProblemTest, LoadSolutionAnswerWithoutBlock) {
  fs::path path =
      write("level_1_problem_1_sample_0_kernel.md", "Sorry, I cannot help with that.\n");
  SolutionSource s = load_solution(path);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error, path.string() + ": no fenced code block in the answer");
}

TEST_F(ProblemTest, LoadSolutionAnswerWithBlocksOnlyInReasoning) {
  fs::path path = write("level_1_problem_1_sample_0_kernel.md",
                        "<think>\n```python\ndraft\n```\n</think>\nOut of tokens.\n");
  SolutionSource s = load_solution(path);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find(path.string() + ": no fenced code block in the answer"), std::string::npos)
      << s.error;
  EXPECT_NE(s.error.find("reasoning"), std::string::npos) << s.error;
}

TEST_F(ProblemTest, LoadSolutionEmptyBlock) {
  fs::path path =
      write("level_1_problem_1_sample_0_kernel.md", "```python\n```\n```python\nx\n```\n");
  SolutionSource s = load_solution(path);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find(path.string()), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("is empty"), std::string::npos) << s.error;
}

}  // namespace problem_test
}  // namespace kbv

namespace kbv {
namespace problem_test {

TEST(ProblemSelection, IdsRangesAndNameParts) {
  std::string error;
  auto sel = parse_selection("19, 23-25,relu", error);
  ASSERT_TRUE(sel) << error;
  auto ref = [](int id, std::string name) { return ProblemRef{1, id, std::move(name), {}}; };
  EXPECT_TRUE(sel->takes(ref(19, "19_Tanh.py")));
  EXPECT_TRUE(sel->takes(ref(23, "23_Softmax.py")));
  EXPECT_TRUE(sel->takes(ref(25, "25_Swish.py")));
  EXPECT_FALSE(sel->takes(ref(26, "26_GELU_.py")));
  EXPECT_TRUE(sel->takes(ref(100, "100_LeakyReLU.py")));  // a part of the name, any case
  EXPECT_TRUE(ProblemSelection{}.takes(ref(1, "1_X.py")));
}

TEST(ProblemSelection, MalformedSpecsSayWhy) {
  std::string error;
  EXPECT_FALSE(parse_selection("5-3", error));
  EXPECT_NE(error.find("goes down; a range goes up (e.g. 3-5)"), std::string::npos) << error;
  EXPECT_FALSE(parse_selection("5-x", error));
  EXPECT_NE(error.find("not a range of ids"), std::string::npos) << error;
  EXPECT_FALSE(parse_selection(" , ", error));
  EXPECT_NE(error.find("give problem ids"), std::string::npos) << error;
}

TEST(ProblemSelection, SelectKeepsTheTakenAndSaysWhenNoneIs) {
  Discovery d;
  d.problems = {ProblemRef{1, 1, "1_A.py", {}}, ProblemRef{1, 2, "2_B.py", {}}, ProblemRef{2, 2, "2_C.py", {}}};
  std::string error;
  Discovery keep = d;
  EXPECT_EQ(select_problems(keep, *parse_selection("2", error), "2"), "");
  ASSERT_EQ(keep.problems.size(), 2u);
  EXPECT_EQ(keep.problems[0].name, "2_B.py");
  Discovery none = d;
  EXPECT_EQ(select_problems(none, *parse_selection("9", error), "9"), "--only 9: no problem of the dataset matches");
}

}  // namespace problem_test
}  // namespace kbv
