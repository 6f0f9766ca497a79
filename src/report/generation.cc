#include "report/generation.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "util/fs.h"

namespace kbv {
namespace fs = std::filesystem;

GenerationSummary read_generation(const fs::path& dir) {
  GenerationSummary g;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string suffix = "_response.json";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        it->is_regular_file(ec))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    FileText t = read_file(f);
    nlohmann::json j = t.ok ? nlohmann::json::parse(t.text, nullptr, false) : nlohmann::json();
    if (!j.is_object()) {
      g.unreadable.push_back(f.string() + ": " + (t.ok ? "not a JSON object" : t.error));
      continue;
    }
    ++g.records;
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
    if (std::string m = str("model"); !m.empty() && std::find(g.models.begin(), g.models.end(), m) == g.models.end())
      g.models.push_back(m);
    auto count = [&](const char* k) { return j.contains(k) && j[k].is_number_integer() ? j[k].get<long long>() : -1; };
    const long long in = count("prompt_tokens"), out = count("completion_tokens");
    if (in >= 0 && out >= 0) {
      g.prompt_tokens += in;
      g.completion_tokens += out;
      ++g.with_tokens;
    }
    if (j.contains("cost_usd") && j["cost_usd"].is_number()) {
      g.cost_usd += j["cost_usd"].get<double>();
      ++g.with_cost;
    }
  }
  return g;
}

}  // namespace kbv
