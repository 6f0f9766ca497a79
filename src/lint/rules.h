// The rules: over the candidate's Python (python_rules) and over the C++/CUDA it compiles
// (cpp_rules). Each appends findings with the rule's id, severity, cheat class and evidence.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lint/finding.h"
#include "lint/lint.h"
#include "lint/python_syntax.h"
#include "lint/sources.h"

namespace kbv {

// `file` names the solution in evidence; `line_offset` is added to its lines; `precision` is the
// evaluated one (precision_downgrade reports only what computes below it).
void python_rules(const PyFacts& facts, const std::string& file, int line_offset, const std::string& precision,
                  std::vector<Finding>& out);
void cpp_rules(const RecoveredSources& sources, std::string_view solution, const std::string& precision,
               std::vector<Finding>& out);

}  // namespace kbv
