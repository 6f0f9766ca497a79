// Reading the JSON of upstream's files.
#include "formats/json_read.h"

#include <cmath>

#include <fmt/format.h>

#include "util/fs.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

std::optional<double> positive_number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<json> parse_json_file(const fs::path& path, std::string& error) {
  FileText t = read_file(path);
  if (!t.ok) {
    error = t.error;
    return std::nullopt;
  }
  try {
    return json::parse(t.text);
  } catch (const json::parse_error& e) {
    error = fmt::format("{}: not valid JSON (byte {}): {}", path.string(), e.byte, e.what());
    return std::nullopt;
  }
}

}  // namespace kbv
