// What can be applied here (probe), strict mode's decision (refusal) and one worker's plan, all in
// the supervisor before fork.
#include <sched.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sandbox/sandbox.h"

namespace kbv::sandbox {
namespace fs = std::filesystem;

namespace {

constexpr const char* kNames[kLayerCount] = {"user_namespace", "pid_namespace", "network_namespace",
                                             "ipc_namespace",  "mount_namespace", "landlock",
                                             "seccomp",        "no_new_privs",   "capabilities",
                                             "uid",            "rlimits"};

constexpr uid_t kNobody = 65534;

// /proc/self/mountinfo's mount points (octal escapes decoded).
std::vector<std::string> mount_points() {
  std::vector<std::string> points;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    std::string decoded;
    for (size_t i = 0; i < point.size(); ++i) {
      if (point[i] == '\\' && i + 3 < point.size()) {
        decoded += static_cast<char>(std::stoi(point.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        decoded += point[i];
      }
    }
    points.push_back(decoded);
  }
  return points;
}

bool under(const std::string& path, const std::string& folder) {
  if (folder == "/") return true;
  return path == folder || (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
                            path[folder.size()] == '/');
}

unsigned long kept_flags(const std::string& point) {
  struct statvfs st {};
  if (::statvfs(point.c_str(), &st) != 0) return 0;
  unsigned long f = 0;
  if (st.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) f |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

// The folders a Python interpreter reads: its prefix (bin/..), that of the file it links to, and a
// venv's base interpreter (pyvenv.cfg "home").
std::vector<std::string> python_roots(const std::string& python) {
  std::vector<std::string> roots;
  std::error_code ec;
  fs::path p = fs::absolute(python, ec);
  auto add = [&](const fs::path& prefix) {
    if (!prefix.empty() && prefix != "/") roots.push_back(prefix.lexically_normal().string());
  };
  add(p.parent_path().parent_path());
  fs::path real = fs::canonical(p, ec);
  if (!ec) add(real.parent_path().parent_path());
  std::ifstream cfg(p.parent_path().parent_path() / "pyvenv.cfg");
  std::string line;
  while (std::getline(cfg, line)) {
    if (line.rfind("home", 0) != 0) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string home = line.substr(eq + 1);
    home.erase(0, home.find_first_not_of(" \t"));
    while (!home.empty() && (home.back() == ' ' || home.back() == '\r')) home.pop_back();
    if (!home.empty()) add(fs::path(home).parent_path());
  }
  return roots;
}

// Landlock access rights (linux/landlock.h; defined here because older headers lack the later ones).
constexpr uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2, kReadDir = 1ULL << 3,
                   kTruncate = 1ULL << 14, kIoctlDev = 1ULL << 15;

uint64_t all_fs_access(int abi) {
  uint64_t all = (1ULL << 13) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) all |= 1ULL << 13;  // refer
  if (abi >= 3) all |= kTruncate;
  if (abi >= 5) all |= kIoctlDev;
  return all;
}

uint64_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : 0;
}

// The first folder on the way to `path` that uid 65534 cannot search; empty when none.
fs::path first_unsearchable(const fs::path& path) {
  fs::path sofar = "/";
  for (auto it = path.begin(); it != path.end(); ++it) {
    if (*it == "/") continue;
    sofar /= *it;
    struct stat st {};
    if (::stat(sofar.c_str(), &st) != 0) return {};
    if (S_ISDIR(st.st_mode) && st.st_uid != 65534 && !(st.st_mode & S_IXOTH) && sofar != path) return sofar;
  }
  return {};
}

// Whether uid 65534 reaches `path` once `blocker` is searchable: "" or why not.
std::string reachable_below(const fs::path& path, const fs::path& blocker) {
  fs::path sofar = blocker;
  fs::path rest = path.lexically_relative(blocker);
  for (auto it = rest.begin(); it != rest.end(); ++it) {
    sofar /= *it;
    struct stat st {};
    if (::stat(sofar.c_str(), &st) != 0) return {};
    bool last = std::next(it) == rest.end();
    mode_t need = S_ISDIR(st.st_mode) ? (last ? S_IXOTH | S_IROTH : S_IXOTH) : S_IROTH;
    if (st.st_uid != 65534 && (st.st_mode & need) != need)
      return fmt::format("{} (mode {:o}, owner uid {}) is not {} by uid 65534", sofar.string(), st.st_mode & 07777,
                         st.st_uid, S_ISDIR(st.st_mode) ? "searchable" : "readable");
  }
  return {};
}

}  // namespace

std::optional<Mode> parse_mode(const std::string& text) {
  if (text == "strict") return Mode::strict;
  if (text == "best-effort") return Mode::best_effort;
  if (text == "off") return Mode::off;
  return std::nullopt;
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::strict: return "strict";
    case Mode::best_effort: return "best-effort";
    case Mode::off: return "off";
  }
  return "?";
}

const char* layer_name(Layer layer) { return layer >= 0 && layer < kLayerCount ? kNames[layer] : "?"; }

std::optional<Layer> parse_layer(const std::string& name) {
  for (int i = 0; i < kLayerCount; ++i)
    if (name == kNames[i]) return static_cast<Layer>(i);
  return std::nullopt;
}

const char* layer_remedy(Layer layer) {
  switch (layer) {
    case kUserNs:
      return "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
             "user.max_user_namespaces > 0, kernel.apparmor_restrict_unprivileged_userns=0) or run kbv as root";
    case kPidNs:
    case kNetNs:
    case kIpcNs:
    case kMountNs:
      return "run kbv as root or allow unprivileged user namespaces, outside a container that forbids unshare";
    case kLandlock:
      return "boot a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y, lsm=...,landlock)";
    case kSeccomp:
      return "install libseccomp-dev (Debian/Ubuntu) and rebuild kbv (scripts/setup.sh)";
    case kNoNewPrivs:
    case kCaps:
    case kLimits:
      return "a Linux kernel that allows prctl/setrlimit for the process (nothing to install)";
    case kUid:
      return "make the Python environment, the kbv build folder and the solution readable by others "
             "(uid 65534), or run kbv as a normal user";
    default:
      return "";
  }
}

Availability probe() {
  Availability a;
  const bool root = ::geteuid() == 0;
  if (root) a.reason[kUserNs] = "not needed: kbv runs as root";
  if (!root) {
    std::ifstream in("/proc/sys/user/max_user_namespaces");
    long n = -1;
    if (in >> n && n == 0) a.reason[kUserNs] = "user.max_user_namespaces is 0";
    std::ifstream deb("/proc/sys/kernel/unprivileged_userns_clone");
    if (deb >> n && n == 0) a.reason[kUserNs] = "kernel.unprivileged_userns_clone is 0";
    for (Layer l : {kPidNs, kNetNs, kIpcNs, kMountNs})
      if (!a.reason[kUserNs].empty()) a.reason[l] = "needs a user namespace: " + a.reason[kUserNs];
  }
  if (!root) a.reason[kUid] = "not needed: kbv is not root (the worker keeps kbv's own uid, without capabilities)";
  int abi = landlock_abi();
  if (abi <= 0) a.reason[kLandlock] = "the kernel has no Landlock (landlock_create_ruleset failed)";
  if (!seccomp_built()) a.reason[kSeccomp] = "built without libseccomp";
  if (const char* marked = std::getenv("KBV_SANDBOX_UNAVAILABLE"); marked && *marked) {
    std::stringstream list(marked);
    std::string name;
    while (std::getline(list, name, ','))
      if (auto l = parse_layer(name)) a.reason[*l] = "marked unavailable by KBV_SANDBOX_UNAVAILABLE";
  }
  return a;
}

std::string refusal(Mode mode, const Availability& a) {
  if (mode != Mode::strict) return {};
  for (int i = 0; i < kLayerCount; ++i) {
    Layer l = static_cast<Layer>(i);
    if (a.available(l)) continue;
    return fmt::format("--sandbox strict: the {} layer cannot be applied ({}); to enable it: {}; or run with "
                       "--sandbox best-effort (what is available, recorded) or --sandbox off",
                       layer_name(l), a.reason[l], layer_remedy(l));
  }
  return {};
}

std::string unreachable_by_nobody(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  fs::path sofar = "/";
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (*it == "/") continue;
    sofar /= *it;
    struct stat st {};
    if (::stat(sofar.c_str(), &st) != 0) return {};  // missing: nothing to read
    bool last = std::next(it) == p.end();
    mode_t need = S_ISDIR(st.st_mode) ? (last ? S_IXOTH | S_IROTH : S_IXOTH) : S_IROTH;
    if (st.st_uid == kNobody) continue;
    if ((st.st_mode & need) != need)
      return fmt::format("{} (mode {:o}, owner uid {}) is not {} by uid 65534", sofar.string(), st.st_mode & 07777,
                         st.st_uid, S_ISDIR(st.st_mode) ? "searchable" : "readable");
  }
  return {};
}

Plan make_plan(Mode mode, const std::string& role, const Availability& a, const std::string& python,
               const Paths& paths, std::string& error) {
  Plan plan;
  plan.mode = mode;
  if (mode == Mode::off) return plan;
  plan.confine = role != "reference";
  const bool root = ::geteuid() == 0;
  // The reference runs trusted code: a mount namespace whose /dev/shm is the folder it shares with
  // its candidates, nothing else (DESIGN.md, "Sandbox").
  std::vector<Layer> layers = plan.confine ? std::vector<Layer>{kUserNs, kPidNs, kNetNs, kIpcNs, kMountNs, kLandlock,
                                                                kSeccomp, kNoNewPrivs, kCaps, kUid, kLimits}
                                           : std::vector<Layer>{kUserNs, kMountNs};
  Availability avail = a;
  std::vector<std::string> tmpfs_over;
  std::vector<Bind> reveals;
  if (plan.confine && root) {
    // uid 65534 must reach what the worker reads. A folder on the way that it cannot search (a
    // 0700 /root holding the Python) is covered, in the worker's mount namespace, by an empty
    // tmpfs into which only the paths needed are bound back.
    std::error_code ec;
    std::vector<fs::path> must = {fs::canonical(python, ec)};
    for (const auto& r : python_roots(python)) must.push_back(r);
    for (const auto& r : paths.read) must.push_back(r);
    for (const fs::path& raw : must) {
      if (raw.empty()) continue;
      fs::path p = fs::weakly_canonical(raw, ec);
      if (unreachable_by_nobody(p).empty()) continue;
      fs::path blocker = first_unsearchable(p);
      std::string why = blocker.empty() || blocker == p ? unreachable_by_nobody(p) : reachable_below(p, blocker);
      if (!why.empty() || !avail.available(kMountNs)) {
        if (avail.reason[kUid].empty())
          avail.reason[kUid] = why.empty() ? unreachable_by_nobody(p) + " (and no mount namespace to reveal it)" : why;
        continue;
      }
      if (std::find(tmpfs_over.begin(), tmpfs_over.end(), blocker.string()) == tmpfs_over.end())
        tmpfs_over.push_back(blocker.string());
      reveals.push_back({p.string(), p.string(), false, fs::is_directory(p, ec)});
    }
  }
  for (Layer l : layers) {
    if (!avail.reason[l].empty() && avail.reason[l].rfind("not needed", 0) == 0) continue;
    if (!avail.available(l)) {
      if (mode == Mode::strict) {
        error = fmt::format("--sandbox strict: the {} layer cannot be applied to the {} worker ({}); to enable it: {}; "
                            "or run with --sandbox best-effort (what is available, recorded) or --sandbox off",
                            layer_name(l), role, avail.reason[l], layer_remedy(l));
        return plan;
      }
      continue;
    }
    plan.want[l] = true;
  }
  if (plan.want[kUserNs]) {
    plan.uid_map = fmt::format("0 {} 1", ::geteuid());
    plan.gid_map = fmt::format("0 {} 1", ::getegid());
  }
  if (plan.want[kPidNs]) plan.unshare_flags |= CLONE_NEWPID;
  if (plan.want[kNetNs]) plan.unshare_flags |= CLONE_NEWNET;
  if (plan.want[kIpcNs]) plan.unshare_flags |= CLONE_NEWIPC;
  if (plan.want[kMountNs]) plan.unshare_flags |= CLONE_NEWNS;

  if (plan.want[kMountNs]) {
    if (!paths.scratch.empty()) plan.binds.push_back({paths.scratch, "/tmp", true});
    if (!paths.ext.empty()) plan.binds.push_back({paths.ext, "/tmp/kbv-ext", true});
    if (!paths.shm.empty()) plan.binds.push_back({paths.shm, "/dev/shm", true});
    plan.mount_proc = plan.want[kPidNs];
    if (plan.want[kUid]) {
      plan.tmpfs_over = tmpfs_over;
      plan.reveals = reveals;
    }
    // What the worker must read but a bind above covers (a kbv build folder or a Python under
    // /tmp, a solution under /dev/shm) is bound back, read-only, at its own path: its source is
    // opened before the cover goes on.
    std::vector<std::string> wanted = python_roots(python);
    wanted.insert(wanted.end(), paths.read.begin(), paths.read.end());
    for (const std::string& raw : wanted) {
      std::error_code ec;
      std::string p = fs::weakly_canonical(raw, ec).string();
      if (ec || p.empty() || !fs::exists(p, ec)) continue;
      bool covered = false, listed = false;
      for (const Bind& b : plan.binds) covered = covered || under(p, b.target);
      for (const Bind& r : plan.reveals) listed = listed || r.target == p;
      if (covered && !listed) plan.reveals.push_back({p, p, false, fs::is_directory(p, ec)});
    }
    if (plan.confine) {
      for (const std::string& point : mount_points()) {
        bool covered = under(point, "/proc");
        for (const Bind& b : plan.binds) covered = covered || under(point, b.target);
        if (covered) continue;
        plan.remount_readonly.push_back(point);
        plan.remount_flags.push_back(kept_flags(point));
      }
    }
  }
  if (plan.want[kLandlock]) {
    plan.landlock_abi = landlock_abi();
    const uint64_t read = kExecute | kReadFile | kReadDir;
    auto rule = [&](const std::string& path, uint64_t access) {
      plan.landlock_paths.push_back(path);
      plan.landlock_access.push_back(access & all_fs_access(plan.landlock_abi));
    };
    for (const char* system : {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/sys"})
      rule(system, read);
    rule("/proc", read | kWriteFile | kTruncate);  // /proc/self/clear_refs (CPU peak RSS), opened with O_TRUNC
    rule("/dev", read | kWriteFile | kTruncate | kIoctlDev);
    for (const std::string& r : python_roots(python)) rule(r, read);
    for (const std::string& r : paths.read) rule(r, read);
    if (!paths.scratch.empty()) rule("/tmp", ~0ULL);
    if (!paths.shm.empty()) rule("/dev/shm", ~0ULL);
  }
  if (plan.want[kSeccomp]) {
    plan.seccomp_filter = seccomp_program(error);
    if (plan.seccomp_filter.empty()) {
      if (mode == Mode::strict) {
        error = "--sandbox strict: the seccomp layer cannot be applied: " + error;
        return plan;
      }
      plan.want[kSeccomp] = false;
      error.clear();
    }
  }
  if (plan.want[kLimits]) {
    struct rlimit nofile {};
    rlim_t files = 65536;
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_max != RLIM_INFINITY)
      files = std::min<rlim_t>(files, nofile.rlim_max);
    plan.rlimit_resource = {RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_CORE};
    plan.rlimit_value = {16384, files, 16ULL << 30, 0};
    // CUDA reserves a virtual address space as large as the machine's memory and the GPUs' together:
    // no address-space limit where a GPU is present.
    std::error_code ec;
    if (!fs::exists("/dev/nvidiactl", ec) && physical_memory() > 0) {
      plan.rlimit_resource.push_back(RLIMIT_AS);
      plan.rlimit_value.push_back(std::max<uint64_t>(2 * physical_memory(), 16ULL << 30));
    }
  }
  if (plan.want[kUid]) {
    plan.drop_uid = true;
    plan.uid = kNobody;
    plan.gid = kNobody;
  }
  return plan;
}

}  // namespace kbv::sandbox
