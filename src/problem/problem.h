// Problem and solution discovery in KernelBench's layouts, and extraction of code
// from a model's raw answer.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbv {

// One problem file of a KernelBench dataset root: <root>/level<L>/.../<id>_<Name>.py
struct ProblemRef {
  int level = 0;
  int id = 0;
  std::string name;              // the whole file name, verbatim ("26_GELU_.py")
  std::filesystem::path path;
};

// One sample of a KernelBench run folder: level_<L>_problem_<P>_sample_<S>_kernel.py
struct SampleRef {
  int level = 0;
  int problem_id = 0;
  int sample_id = 0;
  std::filesystem::path path;
};

struct Discovery {
  std::vector<ProblemRef> problems;   // sorted by (level, id)
  std::vector<std::string> warnings;  // e.g. "level1/abc.py: no numeric id before the first '_'; skipped",
                                      // "level1/3_X.py and level1/sub/3_Y.py both have id 3; keeping the first"
  std::string error;                  // set when the root itself is unusable
};

// Every level<L> folder under root (or only `level`), searched recursively for *.py
// files whose name starts with digits then '_'. __init__.py and non-matching names are ignored.
Discovery discover_dataset(const std::filesystem::path& root, std::optional<int> level = std::nullopt);

struct RunDiscovery {
  std::vector<SampleRef> samples;     // sorted by (level, problem_id, sample_id)
  std::vector<std::string> warnings;
  std::string error;
};

// Which problems a command takes (`--only 19,23-25,ReLU`): ids, inclusive id ranges, and parts of
// file names (case-insensitive). Empty: every problem.
struct ProblemSelection {
  std::vector<std::pair<int, int>> ids;  // [first, last]
  std::vector<std::string> names;        // lower case
  bool empty() const { return ids.empty() && names.empty(); }
  bool takes(const ProblemRef& p) const;
};
// nullopt with `error` ("--only 5-3: a range goes up, e.g. 3-5") for a malformed spec.
std::optional<ProblemSelection> parse_selection(const std::string& spec, std::string& error);
// Keeps the selected problems; "" or an error naming the spec when nothing is left.
std::string select_problems(Discovery& dataset, const ProblemSelection& selection, const std::string& spec);

// Files named level_<L>_problem_<P>_sample_<S>_kernel.py directly in run_dir (also accepts the
// .md/.txt raw-answer forms with the same stem). A sample with only the raw answer that
// `kbv generate` keeps, level_<L>_problem_<P>_sample_<S>_response.md, is that file: its answer
// had no code block, and evaluating it says so. Only `level` when given.
RunDiscovery discover_run(const std::filesystem::path& run_dir, std::optional<int> level = std::nullopt);

// The id of a KernelBench problem file: the digits before the first '_'. "26_GELU_.py" -> 26.
std::optional<int> parse_problem_id(std::string_view file_name);

// Code extracted from a model's raw answer, as KernelBench does it: the first fenced block
// (``` ... ```), a leading language tag (python, py, cpp, c++, cuda, c) stripped. Blocks inside a
// reasoning section (<think>...</think>, or everything before a lone </think>) are skipped.
struct Extraction {
  bool found = false;
  std::string code;
  int block_index = -1;          // 0-based index of the fenced block used
  int block_count = 0;           // fenced blocks in the text
  std::string language_tag;      // the tag that was stripped, empty if none
  int first_line = 0;            // 1-based line in the text where the code starts
  int skipped_in_reasoning = 0;  // fenced blocks inside the reasoning section, not counted above
};
Extraction extract_code(std::string_view text);

// A solution as evaluated: a .py file as is, a .md/.txt file through extract_code.
struct SolutionSource {
  bool ok = false;
  std::string code;
  std::string origin;            // "file" or "markdown block 1 of 3 (python), line 12"
  int first_line = 1;            // the line of the file where `code` starts
  std::string error;             // "<path>: no fenced code block in the answer", "cannot read <path>: ..."
};
SolutionSource load_solution(const std::filesystem::path& path);

}  // namespace kbv
