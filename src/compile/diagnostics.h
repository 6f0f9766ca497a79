// Turns a compiler log or a Python traceback into the few lines a user needs.
#pragma once
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
