// The sandbox's pure parts (the /proc status parser, strict/best-effort decisions, the record's
// judgement) and the spawner applying a plan to a shell (no Python): what the child sees.
#include <gtest/gtest.h>

#include <fstream>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "sandbox/sandbox.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kbv {
namespace sandbox_test {

namespace fs = std::filesystem;
using namespace sandbox;

const char* kStatus =
    "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t2\nPid:\t2\nPPid:\t1\n"
    "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t\n"
    "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
    "CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
    "Seccomp_filters:\t1\nSpeculation_Store_Bypass:\tthread vulnerable\n";

TEST(SandboxStatus, ParsesTheFieldsTheCheckReads) {
  ProcStatus s = parse_proc_status(kStatus);
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.uid, 65534);
  EXPECT_EQ(s.gid, 65534);
  EXPECT_EQ(s.no_new_privs, 1);
  EXPECT_EQ(s.seccomp, 2);
  EXPECT_EQ(s.cap_eff, 0u);
  EXPECT_EQ(s.cap_bnd, 0u);
}

TEST(SandboxStatus, ReadsRootWithEveryCapability) {
  ProcStatus s = parse_proc_status(
      "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"
      "NoNewPrivs:\t0\nSeccomp:\t0\n");
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.uid, 0);
  EXPECT_EQ(s.cap_eff, 0x1ffffffffffULL);
  EXPECT_EQ(s.seccomp, 0);
}

TEST(SandboxStatus, AStatusWithoutTheFieldsIsNotOk) {
  EXPECT_FALSE(parse_proc_status("").ok);
  EXPECT_FALSE(parse_proc_status("Uid:\t0\t0\t0\t0\nSeccomp:\tx\n").ok);
  // An old kernel without the Seccomp line: not ok, so "applied" cannot be confirmed.
  EXPECT_FALSE(parse_proc_status("Uid:\t0\nGid:\t0\nCapEff:\t0\nCapBnd:\t0\nNoNewPrivs:\t1\n").ok);
}

TEST(SandboxMode, ParsesTheThreeModes) {
  EXPECT_EQ(parse_mode("strict"), Mode::strict);
  EXPECT_EQ(parse_mode("best-effort"), Mode::best_effort);
  EXPECT_EQ(parse_mode("off"), Mode::off);
  EXPECT_FALSE(parse_mode("on").has_value());
  EXPECT_EQ(parse_layer("seccomp"), kSeccomp);
  EXPECT_FALSE(parse_layer("selinux").has_value());
}

Availability all_available() {
  Availability a;
  a.reason[kUserNs] = "not needed: kbv runs as root";
  return a;
}

TEST(SandboxPolicy, StrictRefusesNamingTheLayerAndTheRemedy) {
  Availability a = all_available();
  EXPECT_EQ(refusal(Mode::strict, a), "");
  a.reason[kSeccomp] = "built without libseccomp";
  std::string r = refusal(Mode::strict, a);
  EXPECT_NE(r.find("the seccomp layer cannot be applied (built without libseccomp)"), std::string::npos) << r;
  EXPECT_NE(r.find("libseccomp-dev"), std::string::npos) << r;
  EXPECT_NE(r.find("--sandbox best-effort"), std::string::npos) << r;
  EXPECT_EQ(refusal(Mode::best_effort, a), "");
  EXPECT_EQ(refusal(Mode::off, a), "");
}

TEST(SandboxPolicy, TheEnvironmentMarksLayersUnavailable) {
  ::setenv("KBV_SANDBOX_UNAVAILABLE", "landlock,pid_namespace,nonsense", 1);
  Availability a = probe();
  ::unsetenv("KBV_SANDBOX_UNAVAILABLE");
  EXPECT_FALSE(a.available(kLandlock));
  EXPECT_FALSE(a.available(kPidNs));
  EXPECT_EQ(a.reason[kLandlock], "marked unavailable by KBV_SANDBOX_UNAVAILABLE");
  EXPECT_NE(refusal(Mode::strict, a).find("pid_namespace"), std::string::npos);
}

Plan wanted(Mode mode) {
  Plan p;
  p.mode = mode;
  p.confine = true;
  for (int i = 0; i < kLayerCount; ++i) p.want[static_cast<size_t>(i)] = i != kUserNs;
  p.uid = 65534;
  return p;
}

ChildLayers all_applied() {
  ChildLayers c;
  for (int i = 0; i < kLayerCount; ++i) c.err[static_cast<size_t>(i)] = i == kUserNs ? -1 : 0;
  return c;
}

std::array<std::optional<bool>, kLayerCount> namespaces_differ(bool differ) {
  std::array<std::optional<bool>, kLayerCount> d;
  for (Layer l : {kPidNs, kNetNs, kIpcNs, kMountNs}) d[l] = differ;
  return d;
}

TEST(SandboxJudge, AppliedWhenTheChildAndProcAgree) {
  std::string refused;
  nlohmann::json j = judge(wanted(Mode::strict), all_available(), all_applied(), parse_proc_status(kStatus),
                           namespaces_differ(true), refused);
  EXPECT_EQ(refused, "");
  EXPECT_EQ(j["mode"], "strict");
  EXPECT_EQ(j["layers"]["seccomp"], "applied");
  EXPECT_EQ(j["layers"]["pid_namespace"], "applied");
  EXPECT_EQ(j["layers"]["user_namespace"], "not needed: kbv runs as root");
  if (::geteuid() == 0) {
    EXPECT_EQ(j["layers"]["uid"], "applied");
  }
}

TEST(SandboxJudge, ProcHasTheLastWord) {
  // The child says seccomp applied, /proc says Seccomp: 0; the namespaces are kbv's own.
  ProcStatus s = parse_proc_status(kStatus);
  s.seccomp = 0;
  std::string refused;
  nlohmann::json j = judge(wanted(Mode::strict), all_available(), all_applied(), s, namespaces_differ(false), refused);
  EXPECT_EQ(j["layers"]["seccomp"], "unavailable: reported applied, but /proc status Seccomp: 0");
  EXPECT_EQ(j["layers"]["network_namespace"],
            "unavailable: reported applied, but /proc shows the worker in kbv's own namespace");
  EXPECT_NE(refused.find("--sandbox strict: the pid_namespace layer did not take effect"), std::string::npos)
      << refused;
}

TEST(SandboxJudge, BestEffortRecordsWhatIsMissingAndGoesOn) {
  Plan p = wanted(Mode::best_effort);
  p.want[kLandlock] = false;
  Availability a = all_available();
  a.reason[kLandlock] = "the kernel has no Landlock (landlock_create_ruleset failed)";
  ChildLayers c = all_applied();
  c.err[kLandlock] = -1;
  c.err[kSeccomp] = EINVAL;
  std::string refused;
  nlohmann::json j = judge(p, a, c, parse_proc_status(kStatus), namespaces_differ(true), refused);
  EXPECT_EQ(refused, "");
  EXPECT_EQ(j["mode"], "best-effort");
  EXPECT_EQ(j["layers"]["landlock"], "unavailable: the kernel has no Landlock (landlock_create_ruleset failed)");
  EXPECT_EQ(j["layers"]["seccomp"], "unavailable: seccomp failed in the worker: Invalid argument");
  EXPECT_EQ(j["layers"]["mount_namespace"], "applied");
}

TEST(SandboxJudge, OffMarksEveryLayer) {
  Plan p;
  std::string refused;
  nlohmann::json j = judge(p, all_available(), ChildLayers{}, ProcStatus{}, {}, refused);
  EXPECT_EQ(j["mode"], "off");
  for (const auto& [layer, state] : j["layers"].items()) EXPECT_EQ(state, "off") << layer;
  EXPECT_EQ(j["layers"].size(), static_cast<size_t>(kLayerCount));
}

// A plan as the worker zygote's fork reads it (sandbox/plan_io.cc): every field comes back, and a
// plan not read whole is refused rather than applied in part.
TEST(SandboxPlanJson, ACandidatesPlanComesBackWhole) {
  Paths paths;
  paths.read = {"/opt/solution.py"};
  paths.scratch = "/tmp/kbv-scratch";
  paths.shm = "/dev/shm/kbv-sbx-1-0";
  std::string error;
  Plan plan = make_plan(Mode::best_effort, "candidate", probe(), "/usr/bin/sh", paths, error);
  ASSERT_EQ(error, "");
  plan.seccomp_filter = {{0x20, 0, 0, 4}, {0x15, 1, 0, 0xc000003e}, {0x06, 0, 0, 0x7fff0000}};
  plan.rlimit_resource = {6};
  plan.rlimit_value = {4096};
  plan.uid = plan.gid = 65534;
  plan.drop_uid = true;
  Plan back;
  ASSERT_TRUE(plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()), back, error)) << error;
  EXPECT_EQ(plan_to_json(back), plan_to_json(plan));
  EXPECT_EQ(back.want, plan.want);
  EXPECT_EQ(back.mode, plan.mode);
  ASSERT_EQ(back.binds.size(), plan.binds.size());
  for (size_t i = 0; i < plan.binds.size(); ++i) {
    EXPECT_EQ(back.binds[i].source, plan.binds[i].source);
    EXPECT_EQ(back.binds[i].target, plan.binds[i].target);
    EXPECT_EQ(back.binds[i].writable, plan.binds[i].writable);
  }
  ASSERT_EQ(back.seccomp_filter.size(), 3u);
  EXPECT_EQ(back.seccomp_filter[1].jt, 1);
  EXPECT_EQ(back.seccomp_filter[1].k, 0xc000003eu);
  EXPECT_EQ(back.uid, 65534u);
  EXPECT_TRUE(back.drop_uid);
}

TEST(SandboxPlanJson, APlanMissingAFieldOrOfAnotherShapeIsRefused) {
  nlohmann::json whole = plan_to_json(Plan{});
  Plan out;
  std::string error;
  ASSERT_TRUE(plan_from_json(whole, out, error)) << error;
  for (const auto& [key, value] : whole.items()) {
    nlohmann::json less = whole;
    less.erase(key);
    Plan p;
    error.clear();
    EXPECT_FALSE(plan_from_json(less, p, error)) << key;
    EXPECT_NE(error.find(key == "binds" || key == "reveals" ? "binds" : key), std::string::npos) << error;
  }
  nlohmann::json wrong = whole;
  wrong["want"] = {true};  // another build's layers
  EXPECT_FALSE(plan_from_json(wrong, out, error));
  wrong = whole;
  wrong["seccomp_filter"] = {{1, 2, 3}};
  EXPECT_FALSE(plan_from_json(wrong, out, error));
  EXPECT_NE(error.find("seccomp"), std::string::npos) << error;
  EXPECT_FALSE(plan_from_json(nlohmann::json::array(), out, error));
}

// The spawner applying a candidate's plan to a shell: what the child can do from inside.
class SandboxSpawn : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kbv_sandbox_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "scratch");
    if (::geteuid() == 0) ::chown((dir_ / "scratch").c_str(), 65534, 65534);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `script` under --sandbox best-effort's plan for a candidate; returns its output.
  std::string run(const std::string& script, ChildLayers* layers = nullptr, std::vector<std::string> read = {}) {
    Availability a = probe();
    Paths paths;
    paths.read = std::move(read);
    paths.scratch = (dir_ / "scratch").string();
    paths.shm = (dir_ / "scratch").string();
    std::string error;
    Plan plan = make_plan(Mode::best_effort, "candidate", a, "/usr/bin/sh", paths, error);
    EXPECT_EQ(error, "");
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", script};
    o.log_path = dir_ / "log";
    o.protocol_pipes = false;
    o.sandbox = &plan;
    std::optional<Child> c = spawn(o, error);
    EXPECT_TRUE(c.has_value()) << error;
    if (!c) return "";
    if (layers) *layers = c->layers;
    EXPECT_TRUE(wait_for(c->pid, std::chrono::seconds(20)).has_value());
    return read_file(dir_ / "log").text;
  }
  fs::path dir_;
};

TEST_F(SandboxSpawn, TheChildSeesOnlyItsOwnProcessesAndWritesOnlyScratch) {
  ChildLayers layers;
  std::string out = run(
      "echo pid=$$; ls /proc | grep -c '^[0-9]' | sed 's/^/procs=/'; "
      "(echo x > /etc/kbv-sandbox-unit-probe) 2>/dev/null && echo etc=written || echo etc=denied; "
      "(echo x > /tmp/probe) && echo tmp=written || echo tmp=denied; id -u | sed 's/^/uid=/'",
      &layers);
  EXPECT_FALSE(fs::exists("/etc/kbv-sandbox-unit-probe"));
  for (int i = 0; i < kLayerCount; ++i)
    EXPECT_LE(layers.err[static_cast<size_t>(i)], 0) << layer_name(static_cast<Layer>(i)) << " failed: errno "
                                                     << layers.err[static_cast<size_t>(i)];
  if (layers.err[kPidNs] == 0) {
    EXPECT_NE(out.find("pid=2\n"), std::string::npos) << out;  // init is 1
    // The shell, its pipeline and the namespace's init: a handful, not the host's processes.
    size_t at = out.find("procs=");
    ASSERT_NE(at, std::string::npos) << out;
    EXPECT_LE(std::stoi(out.substr(at + 6)), 6) << out;
  }
  if (layers.err[kMountNs] == 0) {
    EXPECT_NE(out.find("etc=denied"), std::string::npos) << out;
    EXPECT_NE(out.find("tmp=written"), std::string::npos) << out;
    EXPECT_TRUE(fs::exists(dir_ / "scratch" / "probe")) << "the child's /tmp is the scratch folder";
  }
  if (::geteuid() == 0 && layers.err[kUid] == 0) {
    EXPECT_NE(out.find("uid=65534"), std::string::npos) << out;
  }
}

// A folder the worker must read that lies under /tmp (a build folder under /tmp, as on the GPU
// host's check) stays readable, read-only, when the scratch folder covers /tmp.
TEST_F(SandboxSpawn, AReadPathUnderTmpIsBoundBackReadOnly) {
  fs::create_directories(dir_ / "lib");
  { std::ofstream(dir_ / "lib" / "module.txt") << "hello from lib\n"; }
  ::chmod(dir_.c_str(), 0755);  // uid 65534 searches it (mkdtemp makes 0700)
  ChildLayers layers;
  const std::string lib = (dir_ / "lib").string();
  std::string out = run("cat " + lib + "/module.txt; (echo x > " + lib + "/new) 2>/dev/null && echo lib=written || "
                        "echo lib=denied",
                        &layers, {lib});
  if (layers.err[kMountNs] != 0) GTEST_SKIP() << "no mount namespace here";
  EXPECT_NE(out.find("hello from lib"), std::string::npos) << out;
  EXPECT_NE(out.find("lib=denied"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir_ / "lib" / "new"));
}

// The CPU memory measurement resets the peak RSS through /proc/self/clear_refs (docs/MEMORY.md).
TEST_F(SandboxSpawn, TheWorkerCanResetItsOwnPeakRss) {
  std::string out = run("(echo 5 > /proc/self/clear_refs) && echo reset=ok || echo reset=failed");
  EXPECT_NE(out.find("reset=ok"), std::string::npos) << out;
}

TEST_F(SandboxSpawn, TheProgramsStatusComesThroughTheRelay) {
  SpawnOptions o;
  // Exit codes and signals pass through the relay and the namespace's init unchanged.
  Availability a = probe();
  Paths paths;
  paths.scratch = (dir_ / "scratch").string();
  std::string error;
  Plan plan = make_plan(Mode::best_effort, "candidate", a, "/usr/bin/sh", paths, error);
  o.argv = {"/bin/sh", "-c", "exit 3"};
  o.protocol_pipes = false;
  o.sandbox = &plan;
  std::optional<Child> c = spawn(o, error);
  ASSERT_TRUE(c.has_value()) << error;
  auto st = wait_for(c->pid, std::chrono::seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->describe(), "exited with code 3");
  o.argv = {"/bin/sh", "-c", "kill -SEGV $$"};
  c = spawn(o, error);
  ASSERT_TRUE(c.has_value()) << error;
  st = wait_for(c->pid, std::chrono::seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->describe(), "killed by signal 11 (SIGSEGV)");
}

}  // namespace sandbox_test
}  // namespace kbv
