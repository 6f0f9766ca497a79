// Reading the JSON of upstream's files: the parsed file, or an error naming it; a positive number.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kbv {

// j[key] when it is a finite number > 0.
std::optional<double> positive_number(const nlohmann::json& j, const char* key);

// The file parsed, or nullopt with `error` naming the file (unreadable, or not JSON: the byte).
std::optional<nlohmann::json> parse_json_file(const std::filesystem::path& path, std::string& error);

}  // namespace kbv
