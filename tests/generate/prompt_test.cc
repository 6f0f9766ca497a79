// Prompts: the template files of prompts/, their variants, input-blind problems.
#include "generate/prompt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "problem/problem.h"
#include "util/hash.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kbv {
namespace prompt_test {

namespace fs = std::filesystem;
const fs::path kSource = KBV_SOURCE_DIR;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read(const fs::path& p) {
  FileText t = read_file(p);
  EXPECT_TRUE(t.ok) << t.error;
  return t.text;
}

Prompt render(const PromptOptions& o, const std::string& source) {
  std::string error;
  auto t = load_prompt_templates(o, error);
  EXPECT_TRUE(t.has_value()) << error;
  if (!t) return {};
  auto p = render_prompt(*t, source, error);
  EXPECT_TRUE(p.has_value()) << error;
  return p ? *p : Prompt{};
}

PromptOptions shipped(const std::string& variant) {
  PromptOptions o;
  o.dir = kSource / "prompts";
  o.variant = variant;
  return o;
}

class PromptFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kbv_prompt_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(kSource / "prompts", dir_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name, std::ios::binary) << text; }
  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------
TEST(Prompt, OneShotHasTheExampleTheProblemAndThePrecisionNote) {
  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  Prompt p = render(shipped("one_shot"), relu);
  EXPECT_FALSE(p.input_blind);
  EXPECT_TRUE(has(p.text, "class Model(nn.Module)")) << p.text;
  EXPECT_TRUE(has(p.text, "return torch.relu(x)"));
  EXPECT_TRUE(has(p.text, "def get_inputs():"));
  EXPECT_TRUE(has(p.text, "batch_size = 4096"));
  EXPECT_TRUE(has(p.text, "add_kernel"));     // the elementwise-add example
  EXPECT_TRUE(has(p.text, "return a + b"));   // and its reference
  EXPECT_FALSE(has(p.text, "softmax_rows_kernel"));  // only one example
  EXPECT_TRUE(has(p.text, "ModelNew"));
  EXPECT_TRUE(has(p.text, "float32"));
  EXPECT_FALSE(has(p.text, "Target hardware"));
  EXPECT_FALSE(has(p.text, "input sizes are not given"));
  // kbv's own settings are not part of the problem.
  EXPECT_FALSE(has(p.text, "KBV_CPU"));
  EXPECT_FALSE(has(p.text, "Sizes the harness uses"));
  EXPECT_FALSE(has(p.text, "{{"));
  EXPECT_EQ(p.hash, sha256_hex(p.text));
}

TEST(Prompt, ZeroShotHasNoExampleAndFewShotHasThemAll) {
  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  Prompt zero = render(shipped("zero_shot"), relu);
  EXPECT_FALSE(has(zero.text, "add_kernel"));
  EXPECT_TRUE(has(zero.text, "load_inline"));
  EXPECT_TRUE(has(zero.text, "return torch.relu(x)"));
  Prompt few = render(shipped("few_shot"), relu);
  EXPECT_TRUE(has(few.text, "add_kernel"));
  EXPECT_TRUE(has(few.text, "scale_bias_relu_kernel"));
  EXPECT_TRUE(has(few.text, "softmax_rows_kernel"));
  EXPECT_TRUE(has(few.text, "Example 3, the model:"));
  EXPECT_NE(zero.hash, few.hash);
}

// --device cpu: a C++ CPU kernel (load_inline with cpp_sources only), from the templates of cpu/.
TEST(Prompt, CpuDeviceAsksForCppKernelsWithACpuExample) {
  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  for (const char* variant : {"zero_shot", "one_shot", "few_shot"}) {
    SCOPED_TRACE(variant);
    PromptOptions o = shipped(variant);
    o.device = "cpu";
    Prompt cpu = render(o, relu);
    Prompt cuda = render(shipped(variant), relu);
    EXPECT_TRUE(has(cpu.text, "custom C++ CPU\nkernels")) << cpu.text;
    EXPECT_TRUE(has(cpu.text, "cpp_sources, no cuda_sources")) << cpu.text;
    EXPECT_TRUE(has(cpu.text, "return torch.relu(x)"));
    EXPECT_TRUE(has(cpu.text, "float32")) << "the precision note is shared";
    EXPECT_FALSE(has(cpu.text, "__global__")) << "no CUDA example";
    EXPECT_FALSE(has(cpu.text, "custom CUDA")) << cpu.text;
    EXPECT_FALSE(has(cpu.text, "{{"));
    EXPECT_NE(cpu.hash, cuda.hash);
    if (std::string(variant) != "zero_shot") {
      EXPECT_TRUE(has(cpu.text, "at::parallel_for")) << "the CPU example";
      EXPECT_TRUE(has(cpu.text, "device=\"cpu\"")) << "its reference makes CPU inputs";
    }
  }
  // The templates' hash says which files made the prompt.
  std::string error;
  PromptOptions o = shipped("one_shot");
  o.device = "cpu";
  auto t = load_prompt_templates(o, error);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(t->files.count("cpu/one_shot.md"));
  EXPECT_TRUE(t->files.count("cpu/examples/01_add_solution.py"));
  EXPECT_FALSE(t->files.count("one_shot.md"));
  EXPECT_TRUE(t->files.count("precision_fp32.md")) << "shared files come from the main folder";
  // A GPU's hardware block makes no sense for a CPU kernel; an unknown device is refused.
  o.hardware = "H100";
  EXPECT_FALSE(load_prompt_templates(o, error));
  EXPECT_TRUE(has(error, "--device cpu")) << error;
  o.hardware.clear();
  o.device = "tpu";
  EXPECT_FALSE(load_prompt_templates(o, error));
  EXPECT_TRUE(has(error, "cuda or cpu")) << error;
}

TEST(Prompt, TheCpuExampleIsACppOnlyLoadInline) {
  std::string solution = read(kSource / "prompts/cpu/examples/01_add_solution.py");
  EXPECT_TRUE(has(solution, "cpp_sources=add_source"));
  EXPECT_FALSE(has(solution, "cuda"));
}

TEST(Prompt, PrecisionAndHardwareBlocks) {
  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  PromptOptions o = shipped("one_shot");
  o.precision = "bf16";
  o.hardware = "h200";  // case does not matter
  Prompt p = render(o, relu);
  EXPECT_TRUE(has(p.text, "bfloat16")) << p.text;
  EXPECT_TRUE(has(p.text, "Target hardware: NVIDIA H200"));
  EXPECT_TRUE(has(p.text, "- Memory bandwidth: 4.8 TB/s"));
  EXPECT_TRUE(has(p.text, "- BF16/FP16 tensor cores: 989 TFLOPS"));

  o.precision = "fp16";  // kbv eval --precision fp16 has its note too
  EXPECT_TRUE(has(render(o, relu).text, "torch.float16")) << render(o, relu).text;
  o.precision = "fp8";
  std::string fp8_error;
  EXPECT_FALSE(load_prompt_templates(o, fp8_error).has_value());
  EXPECT_TRUE(has(fp8_error, "fp32, bf16 or fp16")) << fp8_error;
  o.precision = "bf16";

  o.hardware = "Z9000";
  std::string error;
  EXPECT_FALSE(load_prompt_templates(o, error).has_value());
  EXPECT_TRUE(has(error, "--hardware Z9000")) << error;
  EXPECT_TRUE(has(error, "H200")) << error;

  o.hardware.clear();
  o.variant = "two_shot";
  EXPECT_FALSE(load_prompt_templates(o, error).has_value());
  EXPECT_TRUE(has(error, "two_shot")) << error;
}

// ---------------------------------------------------------------------------------------------
// Input-blind problems.

TEST(Prompt, InputBlindSendsOnlyTheModel) {
  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  PromptOptions o = shipped("one_shot");
  o.input_blind_all = true;
  Prompt p = render(o, relu);
  EXPECT_TRUE(p.input_blind);
  EXPECT_TRUE(has(p.text, "input sizes are not given")) << p.text;
  std::string sent = problem_for_prompt(relu, true);
  EXPECT_TRUE(has(sent, "import torch.nn as nn"));
  EXPECT_TRUE(has(sent, "class Model(nn.Module):"));
  EXPECT_TRUE(has(sent, "return torch.relu(x)"));
  EXPECT_FALSE(has(sent, "get_inputs")) << sent;
  EXPECT_FALSE(has(sent, "get_init_inputs"));
  EXPECT_FALSE(has(sent, "batch_size"));
  EXPECT_FALSE(has(sent, "393216"));
  EXPECT_FALSE(has(sent, "KBV_CPU"));
  EXPECT_FALSE(has(sent, "Sizes the harness uses"));
  EXPECT_FALSE(has(sent, "\n\n\n\n"));
  // The example in the prompt keeps its get_inputs: only the problem is blind.
  EXPECT_TRUE(has(p.text, "def get_inputs():"));
}

TEST(Prompt, MarkedInputBlind) {
  EXPECT_TRUE(marked_input_blind("import torch\nKBV_INPUT_BLIND = True\n"));
  EXPECT_TRUE(marked_input_blind("KBV_INPUT_BLIND=True  # sizes hidden\n"));
  EXPECT_FALSE(marked_input_blind("KBV_INPUT_BLIND = False\n"));
  EXPECT_FALSE(marked_input_blind("def f():\n    KBV_INPUT_BLIND = True\n"));
  EXPECT_FALSE(marked_input_blind("\"\"\"\nKBV_INPUT_BLIND = True\n\"\"\"\n"));
  EXPECT_FALSE(marked_input_blind("x = 1\n"));

  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  Prompt p = render(shipped("zero_shot"), relu + "\nKBV_INPUT_BLIND = True\n");
  EXPECT_TRUE(p.input_blind);
  EXPECT_FALSE(has(p.text, "KBV_INPUT_BLIND"));
  EXPECT_FALSE(has(p.text, "get_inputs")) << p.text;
}

TEST(Prompt, StatementsSpanningLinesAreKeptOrDroppedWhole) {
  const std::string source =
      "import torch\n"
      "import torch.nn as nn\n"
      "\n"
      "\n"
      "def helper(x):\n"
      "    y = x * 2\n"
      "\n"
      "# a column-0 comment inside the function\n"
      "    return y\n"
      "\n"
      "\n"
      "class Model(nn.Module):\n"
      "    \"\"\"Docstring with a line that looks top-level:\n"
      "def get_inputs():\n"
      "batch = 3\n"
      "    \"\"\"\n"
      "\n"
      "    def __init__(self, dims=(1,\n"
      "2, 3)):\n"
      "        super().__init__()\n"
      "\n"
      "    @torch.no_grad()\n"
      "    def forward(self, x):\n"
      "        return helper(x)\n"
      "\n"
      "\n"
      "shape = (\n"
      "    128,\n"
      "    256,\n"
      ")\n"
      "a, b = 1, 2\n"
      "eps: float = 1e-5\n"
      "text = 'x = (' \\\n"
      "    'y'\n"
      "if eps == 1e-5:\n"
      "    pass\n"
      "\n"
      "\n"
      "@staticmethod\n"
      "def get_inputs():\n"
      "    x = torch.randn(*shape)\n"
      "\n"
      "    return [x]\n"
      "\n"
      "\n"
      "def get_init_inputs():\n"
      "    return []\n";
  std::string blind = problem_for_prompt(source, true);
  EXPECT_TRUE(has(blind, "def helper(x):\n    y = x * 2\n\n# a column-0 comment inside the function\n    return y\n"))
      << blind;
  EXPECT_TRUE(has(blind, "def get_inputs():\nbatch = 3\n    \"\"\"\n"));  // the docstring, whole
  EXPECT_TRUE(has(blind, "    def __init__(self, dims=(1,\n2, 3)):\n"));
  EXPECT_TRUE(has(blind, "    @torch.no_grad()\n    def forward(self, x):\n        return helper(x)\n"));
  EXPECT_TRUE(has(blind, "if eps == 1e-5:\n    pass\n"));
  for (const char* gone : {"shape", "128", "256,", "a, b", "'y'", "@staticmethod", "torch.randn", "return [x]",
                           "get_init_inputs", "return []"})
    EXPECT_FALSE(has(blind, gone)) << gone << " in\n" << blind;
  EXPECT_TRUE(has(blind, "eps: float = 1e-5\n"));  // the kept `if` reads it

  std::string open = problem_for_prompt(source, false);
  EXPECT_EQ(open, source);  // nothing of kbv's to drop
}

// A constant the model itself reads (KernelBench's LSTM problems size h0 with the global
// batch_size) stays, or the code sent would not run; a parameter of the same name does not count.
TEST(Prompt, InputBlindKeepsConstantsTheModelReads) {
  const std::string source =
      "import torch.nn as nn\n"
      "\n"
      "class Model(nn.Module):\n"
      "    def __init__(self, hidden, dim=1):\n"
      "        super().__init__()\n"
      "        self.h0 = torch.randn((layers, batch_size, hidden))  # 'seq_len' in a comment\n"
      "        self.dim = dim\n"
      "        self.note = \"seq_len\"\n"
      "\n"
      "    def forward(self, x):\n"
      "        width = 4\n"
      "        return x.sum(self.dim) * width * scale.value\n"
      "\n"
      "batch_size = 10\n"
      "layers = depth * 2\n"
      "depth = 3\n"
      "seq_len = 512\n"
      "hidden = 256\n"
      "dim = 1\n"
      "width = 8\n"
      "value = 2\n"
      "scale = Scale()\n"
      "\n"
      "def get_inputs():\n"
      "    return [torch.randn(batch_size, seq_len, hidden)]\n";
  std::string blind = problem_for_prompt(source, true);
  for (const char* kept : {"batch_size = 10", "layers = depth * 2", "depth = 3", "scale = Scale()"})
    EXPECT_TRUE(has(blind, kept)) << kept << " missing in\n" << blind;
  for (const char* gone : {"seq_len =", "\nhidden =", "\ndim =", "width = 8", "value =", "get_inputs"})
    EXPECT_FALSE(has(blind, gone)) << gone << " in\n" << blind;
}

// Every built-in problem, sent input-blind, is still Python and has no get_inputs.
TEST(Prompt, EveryBuiltInProblemStaysPythonWhenBlind) {
  Discovery d = discover_dataset(kSource / "problems");
  ASSERT_EQ(d.error, "");
  fs::path dir = fs::temp_directory_path() / ("kbv_prompt_blind_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> argv = {KBV_DEFAULT_PYTHON, "-I", "-c",
                                   "import ast, sys\n"
                                   "for f in sys.argv[1:]:\n"
                                   "    t = ast.parse(open(f).read(), f)\n"
                                   "    names = [n.name for n in t.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]\n"
                                   "    assert 'Model' in names and 'get_inputs' not in names, (f, names)\n"
                                   "    assert not any(isinstance(n, (ast.Assign, ast.AnnAssign)) for n in t.body), f\n"};
  // (The built-in problems' classes read no module constant, so none is kept.)
  for (const ProblemRef& p : d.problems) {
    fs::path out = dir / (std::to_string(p.level) + "_" + p.name);
    std::ofstream(out) << problem_for_prompt(read(p.path), true);
    argv.push_back(out.string());
  }
  RunResult r = run_command(argv, {}, std::chrono::seconds(60));
  EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.output << r.error;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Templates a user edits.

TEST(Prompt, FillTemplate) {
  std::string error;
  auto out = fill_template("a {{x}} b {{ y }} {{0}} { {x} } {{x", {{"x", "1"}, {"y", "2"}}, "t.md", error);
  ASSERT_TRUE(out.has_value()) << error;
  EXPECT_EQ(*out, "a 1 b 2 {{0}} { {x} } {{x");
  EXPECT_FALSE(fill_template("one\ntwo {{nope}}\n", {{"x", "1"}}, "dir/t.md", error).has_value());
  EXPECT_EQ(error, "dir/t.md:2: unknown placeholder {{nope}} (known here: x)");
}

TEST_F(PromptFiles, EditedTemplatesChangeThePromptAndItsHash) {
  std::string relu = read(kSource / "problems/level1/19_ReLU.py");
  PromptOptions o;
  o.dir = dir_;
  o.variant = "zero_shot";
  std::string error;
  auto before = load_prompt_templates(o, error);
  ASSERT_TRUE(before) << error;
  write("zero_shot.md", "Make this faster:\n{{problem}}\n{{precision_note}}{{hardware_block}}{{input_note}}");
  write("system.md", "You are a CUDA expert.");
  auto after = load_prompt_templates(o, error);
  ASSERT_TRUE(after) << error;
  EXPECT_NE(before->hash, after->hash);
  EXPECT_EQ(after->files.at("system.md"), "You are a CUDA expert.");
  auto p = render_prompt(*after, relu, error);
  ASSERT_TRUE(p) << error;
  EXPECT_TRUE(p->text.starts_with("Make this faster:\nimport torch\n")) << p->text;

  write("zero_shot.md", "Make this faster:\n{{problem}}\n{{model_name}}\n");
  auto bad = load_prompt_templates(o, error);
  ASSERT_TRUE(bad) << error;
  EXPECT_FALSE(render_prompt(*bad, relu, error).has_value());
  EXPECT_TRUE(has(error, (dir_ / "zero_shot.md").string() + ":3: unknown placeholder {{model_name}}")) << error;

  fs::remove(dir_ / "precision_fp32.md");
  EXPECT_FALSE(load_prompt_templates(o, error).has_value());
  EXPECT_TRUE(has(error, (dir_ / "precision_fp32.md").string())) << error;
}

TEST_F(PromptFiles, ExamplesComeFromTheExamplesFolder) {
  fs::remove_all(dir_ / "examples");
  fs::create_directories(dir_ / "examples");
  PromptOptions o;
  o.dir = dir_;
  std::string error;
  EXPECT_FALSE(load_prompt_templates(o, error).has_value());
  EXPECT_TRUE(has(error, "no example pairs")) << error;
  write("examples/05_mine_reference.py", "REF5\n");
  write("examples/05_mine_solution.py", "SOL5\n");
  write("examples/09_other_reference.py", "REF9\n");  // without its solution
  auto one = load_prompt_templates(o, error);
  ASSERT_TRUE(one) << error;
  ASSERT_EQ(one->examples.size(), 1u);
  EXPECT_EQ(one->examples[0].first, "REF5\n");
  o.variant = "few_shot";
  EXPECT_FALSE(load_prompt_templates(o, error).has_value());
  EXPECT_TRUE(has(error, "09_other_solution.py")) << error;
}

}  // namespace prompt_test
}  // namespace kbv
