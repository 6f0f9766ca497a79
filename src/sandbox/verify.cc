// The check from outside: what /proc shows of the running worker (its status, its namespaces),
// against the plan and the child's own report. Landlock and rlimits do not show in /proc: they
// rest on the child's report, made after they were applied and before exec.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sandbox/sandbox.h"

namespace kbv::sandbox {

ProcStatus parse_proc_status(const std::string& text) {
  ProcStatus s;
  std::istringstream in(text);
  std::string line;
  int seen = 0;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::istringstream value(line.substr(colon + 1));
    if (key == "Uid") {
      if (value >> s.uid) ++seen;
    } else if (key == "Gid") {
      if (value >> s.gid) ++seen;
    } else if (key == "NoNewPrivs") {
      if (value >> s.no_new_privs) ++seen;
    } else if (key == "Seccomp") {
      if (value >> s.seccomp) ++seen;
    } else if (key == "CapEff" || key == "CapBnd") {
      std::string hex;
      if (!(value >> hex) || hex.empty() || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        continue;
      (key == "CapEff" ? s.cap_eff : s.cap_bnd) = std::stoull(hex, nullptr, 16);
      ++seen;
    }
  }
  s.ok = seen == 6;
  return s;
}

nlohmann::json judge(const Plan& plan, const Availability& a, const ChildLayers& child, const ProcStatus& status,
                     const std::array<std::optional<bool>, kLayerCount>& ns_differs, std::string& refused) {
  nlohmann::json layers = nlohmann::json::object();
  const bool root_uid = ::geteuid() == 0;
  for (int i = 0; i < kLayerCount; ++i) {
    Layer l = static_cast<Layer>(i);
    std::string state;
    if (plan.mode == Mode::off) {
      state = "off";
    } else if (!plan.want[l]) {
      if (!a.reason[l].empty() && a.reason[l].rfind("not needed", 0) == 0)
        state = a.reason[l];
      else if (!plan.confine && l != kMountNs && l != kUserNs)
        state = "not applied: trusted reference (DESIGN.md, Sandbox)";
      else
        state = "unavailable: " + (a.reason[l].empty() ? std::string("not applied") : a.reason[l]);
    } else if (child.err[l] > 0) {
      state = fmt::format("unavailable: {} failed in the worker: {}", layer_name(l), std::strerror(child.err[l]));
    } else if (child.err[l] < 0) {
      state = "unavailable: the worker did not report it";
    } else {
      // Reported applied; /proc has the last word where it shows the layer.
      std::string contradiction;
      switch (l) {
        case kUserNs:
        case kPidNs:
        case kNetNs:
        case kIpcNs:
        case kMountNs:
          if (!ns_differs[l].has_value())
            contradiction = "its namespace could not be read from /proc";
          else if (!*ns_differs[l])
            contradiction = "/proc shows the worker in kbv's own namespace";
          break;
        case kSeccomp:
          if (!status.ok || status.seccomp != 2) contradiction = fmt::format("/proc status Seccomp: {}", status.seccomp);
          break;
        case kNoNewPrivs:
          if (!status.ok || status.no_new_privs != 1)
            contradiction = fmt::format("/proc status NoNewPrivs: {}", status.no_new_privs);
          break;
        case kCaps:
          if (!status.ok || status.cap_eff != 0 || status.cap_bnd != 0)
            contradiction = fmt::format("/proc status CapEff: {:016x} CapBnd: {:016x}", status.cap_eff, status.cap_bnd);
          break;
        case kUid:
          if (!status.ok || (root_uid && status.uid != static_cast<long>(plan.uid)))
            contradiction = fmt::format("/proc status Uid: {}", status.uid);
          break;
        default:
          break;
      }
      state = contradiction.empty() ? "applied" : "unavailable: reported applied, but " + contradiction;
    }
    if (plan.mode == Mode::strict && plan.want[l] && state != "applied" && refused.empty())
      refused = fmt::format("--sandbox strict: the {} layer did not take effect ({}); to enable it: {}", layer_name(l),
                            state, layer_remedy(l));
    layers[layer_name(l)] = state;
  }
  return nlohmann::json{{"mode", mode_name(plan.mode)}, {"layers", layers}};
}

nlohmann::json verify(const Plan& plan, const Availability& a, const ChildLayers& child, int target,
                      std::string& refused) {
  ProcStatus status;
  std::array<std::optional<bool>, kLayerCount> differs;
  if (target > 0) {
    std::ifstream in(fmt::format("/proc/{}/status", target));
    std::stringstream text;
    text << in.rdbuf();
    status = parse_proc_status(text.str());
    const std::pair<Layer, const char*> ns[] = {
        {kUserNs, "user"}, {kPidNs, "pid"}, {kNetNs, "net"}, {kIpcNs, "ipc"}, {kMountNs, "mnt"}};
    for (const auto& [layer, name] : ns) {
      char mine[128] = {}, theirs[128] = {};
      std::string own = fmt::format("/proc/self/ns/{}", name), other = fmt::format("/proc/{}/ns/{}", target, name);
      ssize_t a1 = ::readlink(own.c_str(), mine, sizeof mine - 1);
      ssize_t a2 = ::readlink(other.c_str(), theirs, sizeof theirs - 1);
      if (a1 > 0 && a2 > 0) differs[layer] = std::strcmp(mine, theirs) != 0;
    }
  }
  return judge(plan, a, child, status, differs, refused);
}

}  // namespace kbv::sandbox
