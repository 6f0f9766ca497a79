// Small file helpers whose failures are values with a message naming the path.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace kbv {

struct FileText {
  bool ok = false;
  std::string text;   // the contents when ok
  std::string error;  // "cannot read <path>: <strerror>" when not ok
};

FileText read_file(const std::filesystem::path& path);

// Writes to a temporary file in the same folder, fsyncs it, renames it over `path`.
// A reader never sees a half-written file. Returns an empty string or an error message.
std::string write_file_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace kbv
