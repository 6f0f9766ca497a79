// Kernel attribution (compute.h).
#include "measure/compute.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "record/finding.h"

namespace kbv::compute {
using nlohmann::json;

namespace {

bool under(const std::string& path, const std::string& root) {
  if (root.empty() || path.size() <= root.size()) return false;
  if (path.compare(0, root.size(), root) != 0) return false;
  return root.back() == '/' || path[root.size()] == '/';
}

}  // namespace

Origin classify_launcher(const std::string& shared_object, const std::vector<std::string>& own_roots) {
  if (shared_object.empty()) return Origin::unknown;
  for (const auto& root : own_roots)
    if (under(shared_object, root)) return Origin::own;
  return Origin::library;
}

json compute_json(const std::vector<KernelRun>& runs, const std::string& method, size_t top) {
  struct Sum {
    int64_t calls = 0;
    uint64_t ns = 0;
  };
  std::map<std::string, Sum> by[3];
  uint64_t total = 0, own = 0;
  for (const auto& r : runs) {
    uint64_t ns = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
    Sum& s = by[static_cast<int>(r.origin)][r.name];
    ++s.calls;
    s.ns += ns;
    total += ns;
    if (r.origin == Origin::own) own += ns;
  }
  auto list = [&](Origin o) {
    std::vector<std::pair<std::string, Sum>> v(by[static_cast<int>(o)].begin(), by[static_cast<int>(o)].end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    json out = json::array();
    for (size_t i = 0; i < v.size() && i < top; ++i)
      out.push_back({{"name", v[i].first}, {"calls", v[i].second.calls}, {"ms", static_cast<double>(v[i].second.ns) / 1e6}});
    return out;
  };
  json j = {{"method", method},
            {"own_share", total > 0 ? static_cast<double>(own) / static_cast<double>(total) : 0.0},
            {"own", list(Origin::own)},
            {"library", list(Origin::library)},
            {"kernels", runs.size()},
            {"device_ms", static_cast<double>(total) / 1e6}};
  json unknown = list(Origin::unknown);
  if (!unknown.empty()) j["unattributed"] = unknown;
  return j;
}

json no_custom_compute_finding(const json& compute) {
  if (compute.value("method", "") == "not_measured") return nullptr;
  if (compute.value("kernels", 0) == 0) return nullptr;
  if (compute.value("own_share", 0.0) > 0) return nullptr;
  if (compute.contains("unattributed") && !compute["unattributed"].empty()) return nullptr;
  std::string names;
  for (const auto& k : compute.value("library", json::array())) {
    if (!names.empty()) names += ", ";
    names += fmt::format("{} ({}x)", k.value("name", ""), k.value("calls", 0));
    if (names.size() > 300) break;
  }
  return make_finding("no_custom_compute", "reject",
                      fmt::format("none of the {} kernel launches of the audited call came from the candidate's own "
                                  "compiled code: the work was done by library kernels (ATen, cuBLAS, cuDNN, ...)",
                                  compute.value("kernels", 0)),
                      names, "T11")
      .to_json();
}

}  // namespace kbv::compute
