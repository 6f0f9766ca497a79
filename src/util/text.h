// Small text helpers shared by the layers that write messages.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kbv {

// The first line of `text`, cut at `max` bytes on a UTF-8 boundary ("..." marks the cut): a
// failure message as one console or table line.
inline std::string first_line(const std::string& text, size_t max = 240) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() <= max) return line;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut) + "...";
}

// `s` without the white space (space, \t, \n, \v, \f, \r) at its ends.
inline std::string_view trim(std::string_view s) {
  const char* space = " \t\n\v\f\r";
  const size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

}  // namespace kbv
