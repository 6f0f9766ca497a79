#include "lint/finding.h"

namespace kbv {

std::optional<Policy> parse_policy(std::string_view name) {
  if (name == "strict") return Policy::strict;
  if (name == "lenient") return Policy::lenient;
  return std::nullopt;
}

const char* policy_name(Policy policy) { return policy == Policy::strict ? "strict" : "lenient"; }

void SourceText::put(char c, int file_line) {
  if (lines.empty() || pending_line) {
    lines.push_back(file_line);
    pending_line = false;
  }
  text += c;
  if (c == '\n') pending_line = true;
}

void SourceText::put(std::string_view s, int file_line) {
  for (char c : s) put(c, file_line);
}

void SourceText::append(const SourceText& other) {
  if (other.text.empty()) return;
  size_t k = 0;
  if (!lines.empty() && !pending_line) k = 1;  // other's first line continues our last line
  for (; k < other.lines.size(); ++k) lines.push_back(other.lines[k]);
  pending_line = other.pending_line;
  text += other.text;
}

int SourceText::file_line(int text_line) const {
  if (text_line < 1 || lines.empty()) return 0;
  if (static_cast<size_t>(text_line) <= lines.size()) return lines[text_line - 1];
  return lines.back() + (text_line - static_cast<int>(lines.size()));
}

std::string line_of(std::string_view text, int line, size_t max) {
  if (line < 1) return "";
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return "";
    ++pos;
  }
  size_t end = text.find('\n', pos);
  std::string_view s = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
  size_t a = s.find_first_not_of(" \t\r\f");
  if (a == std::string_view::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\f");
  std::string out(s.substr(a, b - a + 1));
  if (out.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
    out = out.substr(0, cut) + "...";
  }
  return out;
}

}  // namespace kbv
