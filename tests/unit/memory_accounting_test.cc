// Memory accounting and kernel attribution on synthetic event streams (src/measure, docs/MEMORY.md).
#include <gtest/gtest.h>

#include "measure/compute.h"
#include "measure/memory.h"
#include "supervisor/memory_phase.h"
#include "util/fs.h"

namespace kbv {
namespace memory_accounting_test {

using memory::CallWindow;
using memory::DeviceEvent;
using memory::TorchEvent;
using nlohmann::json;
using A = TorchEvent::Action;

constexpr int64_t MiB = 1 << 20;
constexpr int64_t GiB = 1LL << 30;

// A process as the worker sees it: torch owns one 2 GiB segment (allocated at t=10), weights
// and inputs (W + I bytes of blocks) live in it before the measured calls.
struct Scenario {
  std::vector<DeviceEvent> device{{10, true, 0x1000000000, 2 * GiB, "libc10_cuda.so"}};
  std::vector<TorchEvent> torch{{11, A::segment_alloc, 0x1000000000, 2 * GiB}};
  std::vector<CallWindow> calls;
  int64_t resting = 0;  // torch bytes live between calls
  uint64_t next_raw = 0x2000000000;

  void raw(uint64_t t, bool alloc, uint64_t addr, uint64_t bytes) { device.push_back({t, alloc, addr, bytes, "ext.so"}); }
  void block(uint64_t t, bool alloc, uint64_t bytes) {
    torch.push_back({t, alloc ? A::block_alloc : A::block_free, 0x1000000000, bytes});
  }
};

// Each call allocates an output of `out` bytes (torch) and drops it at the end.
Scenario calls_with_output(int n, int64_t resting, int64_t out) {
  Scenario s;
  s.resting = resting;
  for (int i = 0; i < n; ++i) {
    uint64_t t0 = 1000 * (i + 1);
    s.block(t0 + 10, true, out);
    s.block(t0 + 90, false, out);
    s.calls.push_back({t0, t0 + 100, resting, resting + out, resting});
  }
  return s;
}

TEST(MemoryAccounting, OneGiBCudaMallocInsideTheCallIsSeenAndAddsToThePeak) {
  const int64_t resting = 300 * MiB, out = 64 * MiB;
  Scenario s = calls_with_output(3, resting, out);
  for (int i = 0; i < 3; ++i) {
    uint64_t t0 = 1000 * (i + 1);
    s.raw(t0 + 20, true, 0x3000000000, GiB);  // cudaMalloc(1 GiB) while the output is alive
    s.raw(t0 + 50, false, 0x3000000000, 0);   // cudaFree
  }
  memory::Account a = memory::account(s.device, s.torch, s.calls, 100 * MiB);
  EXPECT_TRUE(a.exact);
  EXPECT_EQ(a.torch_peak, resting + out);  // what max_memory_allocated says
  EXPECT_EQ(a.non_torch_peak, GiB);        // what it misses
  EXPECT_EQ(a.peak, resting + out + GiB);
  EXPECT_EQ(a.persistent, resting - 100 * MiB);
  EXPECT_EQ(a.growth_per_call, 0);
  EXPECT_EQ(a.largest_non_torch_bytes, static_cast<uint64_t>(GiB));
  EXPECT_EQ(a.largest_non_torch_source, "ext.so");
}

TEST(MemoryAccounting, PeaksThatDoNotOverlapAreNotAdded) {
  Scenario s;
  s.block(1010, true, 100 * MiB);
  s.block(1020, false, 100 * MiB);
  s.raw(1030, true, 0x3000000000, 80 * MiB);
  s.raw(1040, false, 0x3000000000, 0);
  s.calls.push_back({1000, 1100, 10 * MiB, 110 * MiB, 10 * MiB});
  s.calls.push_back({2000, 2100, 10 * MiB, 10 * MiB, 10 * MiB});
  memory::Account a = memory::account(s.device, s.torch, s.calls, 0);
  EXPECT_EQ(a.calls[0].peak, 110 * MiB);  // not 190 MiB: the raw buffer came after torch's block was freed
  EXPECT_EQ(a.calls[0].non_torch_peak, 80 * MiB);
  EXPECT_EQ(a.calls[1].peak, 10 * MiB);
  EXPECT_EQ(a.calls[1].non_torch_peak, 0);
}

TEST(MemoryAccounting, BufferKeptAcrossCallsIsPersistentNotALeak) {
  Scenario s = calls_with_output(3, 40 * MiB, 4 * MiB);
  s.raw(500, true, 0x3000000000, 512 * MiB);  // cudaMalloc'd on an earlier call (a correctness trial), kept
  memory::Account a = memory::account(s.device, s.torch, s.calls, 8 * MiB);
  EXPECT_EQ(a.persistent, 40 * MiB - 8 * MiB + 512 * MiB);
  EXPECT_EQ(a.non_torch_peak, 512 * MiB);
  EXPECT_EQ(a.peak, 44 * MiB + 512 * MiB);
  EXPECT_EQ(a.growth_per_call, 0);
  for (const auto& c : a.calls) EXPECT_EQ(c.non_torch_at_rest, 512 * MiB);
}

TEST(MemoryAccounting, LeakOf64MiBPerCallIsGrowth) {
  Scenario s = calls_with_output(4, 40 * MiB, 4 * MiB);
  for (int i = 0; i < 4; ++i) s.raw(1000 * (i + 1) + 30, true, 0x3000000000 + i * 0x10000000ULL, 64 * MiB);
  memory::Account a = memory::account(s.device, s.torch, s.calls, 0);
  EXPECT_DOUBLE_EQ(a.growth_per_call, 64.0 * MiB);
  EXPECT_EQ(a.calls[3].non_torch_at_rest, 4 * 64 * MiB);
  EXPECT_EQ(a.non_torch_peak, 4 * 64 * MiB);
}

TEST(MemoryAccounting, TorchLeakShowsAsGrowthToo) {
  Scenario s;
  for (int i = 0; i < 3; ++i) {
    uint64_t t0 = 1000 * (i + 1);
    int64_t before = 10 * MiB + i * 64 * MiB;
    s.block(t0 + 10, true, 64 * MiB);  // kept in a Python list by the candidate
    s.calls.push_back({t0, t0 + 100, before, before + 64 * MiB, before + 64 * MiB});
  }
  memory::Account a = memory::account(s.device, s.torch, s.calls, 0);
  EXPECT_DOUBLE_EQ(a.growth_per_call, 64.0 * MiB);
  EXPECT_EQ(a.non_torch_peak, 0);
}

TEST(MemoryAccounting, TorchSegmentsAreNotCountedOutsideTorch) {
  Scenario s = calls_with_output(2, 10 * MiB, 4 * MiB);
  // The allocator grows during the first call: a new segment, reported right after its cudaMalloc.
  s.device.push_back({1005, true, 0x1100000000, 20 * MiB, "libc10_cuda.so"});
  s.torch.push_back({1006, A::segment_alloc, 0x1100000000, 20 * MiB});
  memory::Account a = memory::account(s.device, s.torch, s.calls, 0);
  EXPECT_EQ(a.non_torch_peak, 0);
  EXPECT_EQ(a.peak, 14 * MiB);
}

TEST(MemoryAccounting, AddressReusedAfterTorchFreedItIsTheCandidates) {
  std::vector<DeviceEvent> device = {{10, true, 0xA000, 100, ""}, {20, false, 0xA000, 0, ""}, {30, true, 0xA000, 100, "x"}};
  std::vector<TorchEvent> torch = {{11, A::segment_alloc, 0xA000, 100}, {19, A::segment_free, 0xA000, 100}};
  std::vector<bool> owned = memory::torch_owned(device, torch);
  EXPECT_TRUE(owned[0]);
  EXPECT_FALSE(owned[2]);
  memory::Account a = memory::account(device, torch, {{25, 40, 0, 0, 0}, {50, 60, 0, 0, 0}}, 0);
  EXPECT_EQ(a.non_torch_peak, 100);
}

TEST(MemoryAccounting, ReportedLibraryNameDoesNotMakeAnAllocationTorchs) {
  // A candidate can build its extension as libc10_cuda.so: only the allocator's reports count.
  std::vector<DeviceEvent> device = {{10, true, 0xA000, 100, "/venv/torch/lib/libc10_cuda.so"},
                                     {11, true, 0xB000, 50, "/cache/ext/libc10_cuda/libc10_cuda.so"}};
  std::vector<bool> owned = memory::torch_owned(device, {{12, A::segment_alloc, 0xA000, 100}});
  EXPECT_TRUE(owned[0]);
  EXPECT_FALSE(owned[1]);
}

TEST(MemoryAccounting, WithoutTorchEventsThePeakIsAnUpperBound) {
  std::vector<DeviceEvent> device = {{1010, true, 0xB000, 50 * MiB, ""}, {1020, false, 0xB000, 0, ""}};
  memory::Account a = memory::account(device, {}, {{1000, 1100, 10 * MiB, 30 * MiB, 10 * MiB}, {2000, 2100, 10 * MiB, 30 * MiB, 10 * MiB}}, 0);
  EXPECT_FALSE(a.exact);
  EXPECT_EQ(a.peak, 80 * MiB);
  ASSERT_FALSE(a.notes.empty());
}

TEST(MemoryAccounting, InPlaceCandidateUsesLessThanTheReference) {
  // Reference: x -> relu(x) -> x * 2 (two outputs' worth of temporaries); candidate: one output.
  Scenario ref = calls_with_output(3, 100 * MiB, 200 * MiB);
  Scenario cand = calls_with_output(3, 100 * MiB, 100 * MiB);
  json r = memory::side_json(memory::account(ref.device, ref.torch, ref.calls, 100 * MiB));
  json c = memory::side_json(memory::account(cand.device, cand.torch, cand.calls, 100 * MiB));
  r["measured"] = c["measured"] = true;
  c["method"] = "cupti-memory+torch-allocator";
  memory::MemoryVerdict v = memory::memory_verdict(c, {{"tf32", r}, {"fp32", r}});
  EXPECT_TRUE(v.memory["measured"].get<bool>());
  EXPECT_DOUBLE_EQ(v.memory["ratio"]["tf32"].get<double>(), 300.0 / 200.0);
  EXPECT_EQ(v.memory["candidate"]["peak_bytes"].get<int64_t>(), 200 * MiB);
  EXPECT_EQ(v.memory["baselines"]["fp32"]["peak_bytes"].get<int64_t>(), 300 * MiB);
  EXPECT_TRUE(v.findings.empty());
}

TEST(MemoryVerdict, LeakAndNonTorchAllocationAreWarnings) {
  json base = {{"measured", true}, {"peak_bytes", 100 * MiB}, {"non_torch_peak_bytes", 0}};
  json cand = {{"measured", true},
               {"method", "cupti-memory+torch-allocator"},
               {"peak_bytes", 1124 * MiB},
               {"non_torch_peak_bytes", GiB},
               {"growth_bytes_per_call", 64.0 * MiB},
               {"calls", 3},
               {"largest_non_torch", {{"bytes", GiB}, {"source", "/cache/ext/m/m.so"}}}};
  memory::MemoryVerdict v = memory::memory_verdict(cand, {{"tf32", base}, {"fp32", base}});
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0]["rule"], "memory_leak");
  EXPECT_EQ(v.findings[0]["severity"], "warn");
  EXPECT_NE(v.findings[0]["message"].get<std::string>().find("64.0 MiB per call"), std::string::npos);
  EXPECT_EQ(v.findings[1]["rule"], "non_torch_allocation");
  EXPECT_NE(v.findings[1]["message"].get<std::string>().find("1.00 GiB"), std::string::npos);
  EXPECT_NE(v.findings[1]["message"].get<std::string>().find("/cache/ext/m/m.so"), std::string::npos);
  EXPECT_FALSE(v.memory["candidate"].contains("largest_non_torch"));
  EXPECT_NEAR(v.memory["ratio"]["tf32"].get<double>(), 100.0 / 1124.0, 1e-12);
}

TEST(MemoryVerdict, SmallNonTorchMemoryTheBaselineAlsoHasIsNoFinding) {
  json base = {{"measured", true}, {"peak_bytes", 100 * MiB}, {"non_torch_peak_bytes", 3 * MiB}};
  json cand = {{"measured", true}, {"peak_bytes", 100 * MiB}, {"non_torch_peak_bytes", 3 * MiB + 1000},
               {"growth_bytes_per_call", 512.0}};
  EXPECT_TRUE(memory::memory_verdict(cand, {{"tf32", base}}).findings.empty());
}

TEST(MemoryVerdict, NotMeasuredIsSaidNeverZero) {
  memory::MemoryVerdict v = memory::memory_verdict({{"measured", false}, {"reason", "no CUPTI"}}, json::object());
  EXPECT_FALSE(v.memory["measured"].get<bool>());
  EXPECT_EQ(v.memory["reason"], "no CUPTI");
  EXPECT_FALSE(v.memory.contains("candidate"));
  EXPECT_FALSE(v.memory.contains("ratio"));
  // A zero candidate peak (CPU RSS growth of an in-place call) gives no ratio, and says why.
  json zero = memory::memory_verdict({{"measured", true}, {"peak_bytes", 0}},
                                     {{"tf32", {{"measured", true}, {"peak_bytes", 4096}}},
                                      {"fp32", {{"measured", false}, {"reason", "timeout"}}}})
                  .memory;
  EXPECT_TRUE(zero["ratio"].empty());
  EXPECT_TRUE(zero.contains("ratio_note"));
  EXPECT_EQ(zero["baselines"]["fp32"]["reason"], "timeout");
}

TEST(MemoryAccounting, RssGrowthPerCall) {
  json j = memory::rss_side_json({{100 * MiB, 164 * MiB, 101 * MiB}, {101 * MiB, 165 * MiB, 102 * MiB},
                                  {102 * MiB, 150 * MiB, 103 * MiB}});
  EXPECT_EQ(j["peak_bytes"].get<int64_t>(), 64 * MiB);
  EXPECT_DOUBLE_EQ(j["growth_bytes_per_call"].get<double>(), 1.0 * MiB);
  EXPECT_FALSE(j.contains("torch_peak_bytes"));  // not measured on the CPU: absent, not 0
}

TEST(KernelAttribution, LaunchSiteDecidesNotTheName) {
  std::vector<std::string> roots = {"/cache/build/abc/ext"};
  EXPECT_EQ(compute::classify_launcher("/cache/build/abc/ext/m/m.so", roots), compute::Origin::own);
  EXPECT_EQ(compute::classify_launcher("/cache/build/abc/ext2/m.so", roots), compute::Origin::library);
  EXPECT_EQ(compute::classify_launcher("/venv/lib/torch/lib/libtorch_cuda.so", roots), compute::Origin::library);
  EXPECT_EQ(compute::classify_launcher("", roots), compute::Origin::unknown);
  // A candidate kernel named like an ATen one is still the candidate's.
  std::vector<compute::KernelRun> runs = {
      {"void at::native::vectorized_elementwise_kernel<4>(...)", 0, 3000, compute::Origin::own},
      {"ampere_sgemm_128x64_nn", 3000, 4000, compute::Origin::library},
      {"ampere_sgemm_128x64_nn", 4000, 5000, compute::Origin::library}};
  json c = compute::compute_json(runs, "cupti");
  EXPECT_DOUBLE_EQ(c["own_share"].get<double>(), 0.6);
  EXPECT_EQ(c["own"][0]["calls"], 1);
  EXPECT_EQ(c["library"][0]["calls"], 2);
  EXPECT_DOUBLE_EQ(c["library"][0]["ms"].get<double>(), 0.002);
  EXPECT_TRUE(compute::no_custom_compute_finding(c).is_null());
}

TEST(KernelAttribution, OnlyLibraryKernelsIsNoCustomCompute) {
  json c = compute::compute_json({{"ampere_sgemm_128x64_nn", 0, 1000, compute::Origin::library}}, "cupti");
  json f = compute::no_custom_compute_finding(c);
  ASSERT_FALSE(f.is_null());
  EXPECT_EQ(f["rule"], "no_custom_compute");
  EXPECT_EQ(f["severity"], "reject");
  EXPECT_EQ(f["cheat"], "T11");
  EXPECT_NE(f["evidence"].get<std::string>().find("ampere_sgemm_128x64_nn (1x)"), std::string::npos);
  // An unresolved launch site gives the benefit of the doubt; no kernels at all decide nothing.
  json u = compute::compute_json({{"k", 0, 1000, compute::Origin::library}, {"j", 0, 10, compute::Origin::unknown}}, "cupti");
  EXPECT_TRUE(compute::no_custom_compute_finding(u).is_null());
  EXPECT_TRUE(compute::no_custom_compute_finding(compute::compute_json({}, "cupti")).is_null());
}

TEST(KernelAttribution, TopListsAreCapped) {
  std::vector<compute::KernelRun> runs;
  for (int i = 0; i < 30; ++i) runs.push_back({"k" + std::to_string(i), 0, static_cast<uint64_t>(100 + i), compute::Origin::own});
  json c = compute::compute_json(runs, "cupti");
  ASSERT_EQ(c["own"].size(), 20u);
  EXPECT_EQ(c["own"][0]["name"], "k29");
  EXPECT_EQ(c["kernels"], 30);
}

TEST(MemoryPhase, GpuAttributionWinsOverTheCpuAuditAndNotMeasuredKeepsIt) {
  Record record;
  record.compute = json{{"method", "record_function"}, {"own_share", 0.5}};
  EXPECT_FALSE(merge_compute(record, {{"method", "not_measured"}, {"reason", "cpu"}}));
  EXPECT_EQ((*record.compute)["method"], "record_function");
  std::optional<Finding> f =
      merge_compute(record, compute::compute_json({{"sgemm", 0, 10, compute::Origin::library}}, "cupti"));
  EXPECT_EQ((*record.compute)["method"], "cupti");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "no_custom_compute");
  EXPECT_EQ(f->severity, "reject");
  // --protocol kernelbench reproduces upstream (no runtime audits): the same finding only warns.
  std::optional<Finding> upstream =
      merge_compute(record, compute::compute_json({{"sgemm", 0, 10, compute::Origin::library}}, "cupti"), true);
  ASSERT_TRUE(upstream);
  EXPECT_EQ(upstream->rule, "no_custom_compute");
  EXPECT_EQ(upstream->severity, "warn");
  EXPECT_NE(upstream->message.find("--protocol kernelbench"), std::string::npos);
}

}  // namespace kbv

// The worker reads its peak RSS from /proc/self/status with this parser, not iostreams (the
// iostream read crashed every CPU memory measurement on the GPU machine).
TEST(MemoryAccounting, StatusRssIsParsedInBytes) {
  const std::string status =
      "Name:\tpython3\nVmPeak:\t 9999 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nRssAnon:\t 5 kB\nThreads:\t17\n";
  int64_t rss = 0, hwm = 0;
  ASSERT_TRUE(kbv::memory::parse_status_rss(status, rss, hwm));
  EXPECT_EQ(rss, 10240 * 1024);
  EXPECT_EQ(hwm, 20480 * 1024);
}

TEST(MemoryAccounting, StatusWithoutRssOrWithAGarbledValueIsRefused) {
  int64_t rss = 0, hwm = 0;
  EXPECT_FALSE(kbv::memory::parse_status_rss("Name:\tx\nVmHWM:\t 1 kB\n", rss, hwm));
  EXPECT_EQ(rss, -1);
  EXPECT_EQ(hwm, -1);
  EXPECT_FALSE(kbv::memory::parse_status_rss("VmRSS:\t 12x kB\nVmHWM:\t 1 kB\n", rss, hwm));
  EXPECT_FALSE(kbv::memory::parse_status_rss("VmRSS:\t kB\nVmHWM:\t 1 kB\n", rss, hwm));
  EXPECT_FALSE(kbv::memory::parse_status_rss("VmRSS:\t 99999999999999999999 kB\nVmHWM:\t 1 kB\n", rss, hwm));
  EXPECT_FALSE(kbv::memory::parse_status_rss("", rss, hwm));
}

TEST(MemoryAccounting, ThisProcessStatusParses) {
  const kbv::FileText t = kbv::read_file("/proc/self/status");
  ASSERT_TRUE(t.ok) << t.error;
  int64_t rss = 0, hwm = 0;
  ASSERT_TRUE(kbv::memory::parse_status_rss(t.text, rss, hwm)) << t.text;
  EXPECT_GT(rss, 0);
  EXPECT_GE(hwm, rss);
}

}  // namespace memory_accounting_test
