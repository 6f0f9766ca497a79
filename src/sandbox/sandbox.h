// The sandbox of the processes that run candidate code (DESIGN.md, "Sandbox"): one file per
// mechanism (namespaces.cc, mounts in namespaces.cc, landlock.cc, seccomp.cc, limits.cc), a plan
// made in the supervisor before fork (plan.cc), applied by the spawner between fork and exec with
// async-signal-safe calls only (util/spawn.cc), and checked from outside once the child runs
// (policy.cc). Nothing here runs Python.
#pragma once
#include <sys/types.h>

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <linux/filter.h>
#include <nlohmann/json.hpp>

namespace kbv::sandbox {

enum class Mode { off, best_effort, strict };
std::optional<Mode> parse_mode(const std::string& text);  // "strict" | "best-effort" | "off"
const char* mode_name(Mode mode);

// The layers, in the order the child applies them.
enum Layer : int {
  kUserNs,     // a user namespace (only when kbv is not root: it gives the rights to make the others)
  kPidNs,      // the worker sees and signals only its own processes
  kNetNs,      // no network: a namespace with a loopback that is down
  kIpcNs,      // System V IPC and POSIX message queues of its own
  kMountNs,    // read-only filesystem except scratch (/tmp), its /dev/shm folder and the build folder
  kLandlock,   // filesystem access by path, TCP bind/connect, signals and abstract sockets scoped
  kSeccomp,    // system calls denied (ptrace, process_vm_*, mount, bpf, sockets but AF_UNIX, ...)
  kNoNewPrivs, // no privileges gained through exec (set-uid programs, file capabilities)
  kCaps,       // every capability dropped, bounding set emptied, securebits locked
  kUid,        // root: the worker runs as uid/gid 65534 (nobody)
  kLimits,     // rlimits: processes, open files, file size, core dumps off, address space (CPU hosts)
  kLayerCount
};
const char* layer_name(Layer layer);               // "pid_namespace", "seccomp", ...
std::optional<Layer> parse_layer(const std::string& name);
// How to make a layer available, for strict mode's refusal.
const char* layer_remedy(Layer layer);

// What this machine and build allow, before any child is started. reason[layer] is empty when the
// layer can be applied, "not needed: ..." when it has nothing to do here (a user namespace when kbv
// is root), otherwise why it cannot. KBV_SANDBOX_UNAVAILABLE=layer,layer (tests) marks layers
// unavailable as if the machine lacked them.
struct Availability {
  std::array<std::string, kLayerCount> reason;
  bool available(Layer l) const { return reason[l].empty() || reason[l].rfind("not needed", 0) == 0; }
};
Availability probe();
// Pure decision: under strict, the first layer that is unavailable, as a message naming it and how
// to enable it; empty when the worker may start (always under best-effort and off).
std::string refusal(Mode mode, const Availability& a);

// What a worker of a role may reach.
struct Paths {
  std::vector<std::string> read;  // read (and execute) only, beyond the system's and Python's
  std::string scratch;            // bound on /tmp, writable (empty: /tmp stays as it is, read-only)
  std::string ext;                // the build folder, bound on /tmp/kbv-ext (a folder made in scratch), writable
  std::string shm;                // bound on /dev/shm, writable
};

struct Bind {
  std::string source, target;
  bool writable = true;
  bool directory = true;  // reveals: a folder or a file is made to bind onto
};

// Everything the child needs, made before fork: after fork only the pointers into these strings
// and vectors are used.
struct Plan {
  Mode mode = Mode::off;
  std::array<bool, kLayerCount> want{};  // layers to apply
  bool confine = false;                 // candidate or build: every layer; reference: mount namespace only
  // namespaces
  int unshare_flags = 0;                // CLONE_NEW* other than the user namespace
  std::string uid_map, gid_map;         // for a user namespace ("0 1000 1")
  // mounts
  std::vector<std::string> remount_readonly;  // every mount point, from /proc/self/mountinfo
  std::vector<unsigned long> remount_flags;   // their flags (nosuid, nodev, noexec kept)
  std::vector<Bind> binds;
  // Folders uid 65534 cannot search (a 0700 /root holding the Python): an empty read-only tmpfs on
  // each, with only the paths the worker needs bound back in, read-only (`reveals`).
  std::vector<std::string> tmpfs_over;
  std::vector<Bind> reveals;
  bool mount_proc = false;
  // landlock
  int landlock_abi = 0;
  std::vector<std::string> landlock_paths;
  std::vector<uint64_t> landlock_access;
  // seccomp
  std::vector<sock_filter> seccomp_filter;
  // limits and identity
  std::vector<int> rlimit_resource;
  std::vector<uint64_t> rlimit_value;
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop_uid = false;
};

// One worker's plan. role: candidate | build | reference. `paths.read/write` are the paths beyond
// the system's (/usr, /lib*, /etc, /opt, /sys, /proc, /dev) and the Python environment's.
// Under strict, an unavailable layer is an error (returned); under best-effort it is skipped.
Plan make_plan(Mode mode, const std::string& role, const Availability& a, const std::string& python,
               const Paths& paths, std::string& error);

// A plan as JSON and back (plan_io.cc), for a worker forked by the zygote (supervisor/zygote.h). Reading
// fails (false, `error`) on any field missing or of another type.
nlohmann::json plan_to_json(const Plan& plan);
bool plan_from_json(const nlohmann::json& j, Plan& plan, std::string& error);

// Child side (async-signal-safe; each returns 0 or an errno value). See namespaces.cc etc.
int enter_user_namespace(const Plan& plan);
int enter_namespace(Layer layer);  // kPidNs, kNetNs, kIpcNs or kMountNs
// `proc`: mount a /proc of the caller's PID namespace (only its first process may).
int setup_mounts(const Plan& plan, bool proc);
int apply_limits(const Plan& plan);
int apply_no_new_privs();
int apply_landlock(const Plan& plan);
int drop_identity(const Plan& plan);  // capabilities and (root) uid/gid
int apply_seccomp(const Plan& plan);

// Parent side, before fork.
int landlock_abi();  // 0: none
bool seccomp_built();
std::vector<sock_filter> seccomp_program(std::string& error);
// A folder (or file) that uid 65534 can reach through every component: "" or why not.
std::string unreachable_by_nobody(const std::filesystem::path& path);

// What the child reported (errno per layer, -1: not attempted) and what /proc shows.
struct ChildLayers {
  std::array<int, kLayerCount> err;
  ChildLayers() { err.fill(-1); }
};

// The fields of /proc/<pid>/status the check reads.
struct ProcStatus {
  bool ok = false;
  long uid = -1, gid = -1;         // real uid and gid
  int no_new_privs = -1;
  int seccomp = -1;                // 0 none, 1 strict, 2 filter
  uint64_t cap_eff = ~0ULL, cap_bnd = ~0ULL;
};
ProcStatus parse_proc_status(const std::string& text);

// The record's `sandbox` field of a worker: {"mode", "layers": {name: "applied" | "unavailable: why"
// | "not needed: why" | "off"}}, from the plan, the child's report and what /proc/<pid> shows of
// `target` (the process that runs Python) against this process. `refused` is set to the first
// layer wanted under strict that did not take effect.
nlohmann::json verify(const Plan& plan, const Availability& a, const ChildLayers& child, int target,
                      std::string& refused);
// The same from given facts (unit-tested): status of the target, whether each namespace differs.
nlohmann::json judge(const Plan& plan, const Availability& a, const ChildLayers& child, const ProcStatus& status,
                     const std::array<std::optional<bool>, kLayerCount>& ns_differs, std::string& refused);

}  // namespace kbv::sandbox
