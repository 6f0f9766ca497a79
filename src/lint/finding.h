// The static analysis's policy (what its findings do), and text recovered
// from a source file with the file line of each of its lines.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record/finding.h"

namespace kbv {

// strict (default): a `reject` finding makes the verdict `rejected`, the candidate is not run.
// lenient (upstream-like): every finding is recorded as a warning and the candidate is run.
enum class Policy { strict, lenient };
std::optional<Policy> parse_policy(std::string_view name);
const char* policy_name(Policy policy);

// Findings are record/finding.h's Finding (file, line and code give their evidence).

// Text recovered from a file (a Python string literal's value, a whole .cu file) together with
// the file line every one of its lines starts on, so evidence points at the file, not the text.
struct SourceText {
  std::string text;
  std::vector<int> lines;  // lines[k]: file line of text line k+1
  bool pending_line = false;

  void put(char c, int file_line);
  void put(std::string_view s, int file_line);
  void append(const SourceText& other);
  int file_line(int text_line) const;  // 1-based text line -> file line (0 when unknown)
};

// The line `line` (1-based) of `text`, without leading/trailing blanks, cut to `max` bytes.
std::string line_of(std::string_view text, int line, size_t max = 160);

}  // namespace kbv
