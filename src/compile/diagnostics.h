// Turns a compiler log or a Python traceback into the few lines a user needs.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbv {

struct Diagnostic {
  std::string file;      // as printed by the compiler ("main.cpp", "/root/.cache/.../cuda.cu")
  int line = 0;
  int column = 0;        // 0 when absent
  std::string severity;  // "error", "fatal error", "warning"
  std::string message;   // the text after "error: "
};

// First `max_errors` errors of a gcc/clang/nvcc log ("file:line:col: error: msg",
// nvcc's "file(line): error: msg", and linker "undefined reference to" lines with line 0).
std::vector<Diagnostic> parse_compiler_errors(std::string_view log, size_t max_errors = 5);

// "file:line: error: msg" lines joined by newlines, for messages and JSON.
std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics);

// load_inline writes the C++/CUDA strings of a solution into generated files (main.cpp, cuda.cu)
// with its own lines around them, so a compiler's line numbers point into a file the user never
// wrote. Maps line `line` (1-based) of `generated` back to the 1-based line of `source` (the .py
// that holds the string) by the longest run of identical lines around it: the string's text is
// found verbatim in the source (a raw or triple-quoted literal). None when the line is not found,
// when the best run is shorter than `min_run` lines, or when two places tie (the mapping would be
// a guess).
std::optional<int> source_line_of(std::string_view generated, std::string_view source, int line,
                                  int min_run = 2);

// From a Python traceback text: the last frame "File \"<path>\", line N, in f" whose path
// equals `file_hint` (when non-empty), else the last frame; plus the final exception line.
struct PythonError {
  std::string file;
  int line = 0;
  std::string function;
  std::string exception;  // "RuntimeError: CUDA error: ..."
};
PythonError parse_python_traceback(std::string_view traceback, std::string_view file_hint = {});

}  // namespace kbv
