// The C++/CUDA a candidate compiles, recovered statically from its Python: the string values
// passed to load_inline(cpp_sources=..., cuda_sources=...) (literals, names bound to them,
// concatenations, f-strings, str.join, textwrap.dedent, .format), the files passed to load(sources=...),
// CuPy RawKernel/RawModule code, and the exported function names.
#pragma once
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lint/finding.h"
#include "lint/python_syntax.h"

namespace kbv {

struct CppUnit {
  std::string origin;  // "cuda_sources", "cpp_sources", "RawKernel", or the file as written
  std::string file;    // the file its lines are in
  int line = 0;        // where it starts in `file`
  SourceText text;     // with the file line of each of its lines
  std::string file_text;  // the whole file when it is not the solution (to quote evidence)
  int line_offset = 0;    // added to `text`'s lines (a block extracted from a Markdown answer)
};

struct RecoveredSources {
  std::string file;                 // the solution, as named in evidence
  int line_offset = 0;
  std::vector<CppUnit> units;
  std::set<std::string> exported;   // functions=[...] of load_inline
  std::vector<std::pair<std::string, int>> flags;  // extra_cflags / extra_cuda_cflags entries, line
  std::vector<Finding> findings;    // sources that could not be resolved (warn)
};

// `file` names the solution in evidence; `base_dir` is where load(sources=[...]) paths start;
// `line_offset` is added to every solution line (a block extracted from a Markdown answer).
RecoveredSources recover_sources(const PyFacts& facts, const std::string& file,
                                 const std::filesystem::path& base_dir, int line_offset);

}  // namespace kbv
