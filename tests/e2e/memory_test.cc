// End-to-end: the measure phase (docs/MEMORY.md). The CPU RSS path runs everywhere; the GPU
// figures (each within 1% of the truth) and the kernel attribution need a GPU and skip without.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace memory_test {

using kbv::e2e::gpu_visible;
using kbv::e2e::kSource;
constexpr double MiB = 1024.0 * 1024.0;

// `kbv eval` of one pair; the record, or a null json with the output in `log`.
json eval_record(const std::string& problem, const std::string& solution, const std::string& device,
                 const std::string& policy, std::string& log, const std::vector<std::string>& extra = {}) {
  static const fs::path dir = kbv::e2e::scratch_dir("memory", "records");
  fs::path out = dir / (fs::path(solution).stem().string() + "-" + device + ".json");
  fs::remove(out);
  std::vector<std::string> args = {"eval", "--problem", (kSource / problem).string(), "--solution",
                                   (kSource / solution).string(), "--device", device, "--trials", "1",
                                   "--policy", policy, "--json", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  kbv::e2e::Outcome o = kbv::e2e::run_kbv(args, out);
  log = o.output;
  return o.record.is_object() ? o.record : json();
}

bool has_finding(const json& record, const std::string& rule) {
  for (const auto& f : record.value("findings", json::array()))
    if (f.value("rule", "") == rule) return true;
  return false;
}

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN; }

// |got - truth| <= 1% of truth.
::testing::AssertionResult within_1pct(double got, double truth) {
  if (std::fabs(got - truth) <= 0.01 * std::fabs(truth)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << " bytes, truth " << truth << " bytes ("
                                       << (got - truth) / MiB << " MiB off)";
}

TEST(Memory, CpuPeakRssGrowthOfTheCall) {
  std::string log;
  // Untimed: the memory phase measures the candidate and both baselines before the timing and
  // without it (supervisor/evaluate_pair.cc, memory_phase.cc); the timing phase cost CPU that
  // nothing here looks at.
  json r = eval_record("problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cpu_honest.py", "cpu", "strict", log,
                       {"--timing", "off"});
  ASSERT_TRUE(r.is_object()) << log;
  ASSERT_EQ(r["verdict"], "correct") << r.dump(2);
  const json& m = r["memory"];
  ASSERT_TRUE(m.value("measured", false)) << m.dump(2);
  EXPECT_EQ(m["method"], "rss");
  // The output, 16 x 4096 float32 on the CPU, is written in full during the call: its pages are
  // resident at the call's peak. No view the CPU cannot measure is reported as 0.
  const double output = 16 * 4096 * 4;
  for (const json* side : {&m["candidate"], &m["baselines"]["tf32"], &m["baselines"]["fp32"]}) {
    EXPECT_GE(num(*side, "peak_bytes"), 0.9 * output) << m.dump(2);
    EXPECT_LT(num(*side, "peak_bytes"), 64 * MiB) << m.dump(2);
    EXPECT_FALSE(side->contains("torch_peak_bytes")) << m.dump(2);
    EXPECT_FALSE(side->contains("persistent_bytes")) << m.dump(2);
    EXPECT_EQ((*side)["calls"], 3);
  }
  EXPECT_GT(num(m["ratio"], "tf32"), 0) << m.dump(2);
  EXPECT_EQ(r["compute"]["method"], "cpu-sampling") << "the CPU runtime audit's, kept: " << r.dump(2);
  EXPECT_FALSE(has_finding(r, "memory_leak")) << r["findings"].dump(2);
}

TEST(Memory, CpuFailureIsNotMeasured) {
  std::string log;
  json r = eval_record("problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cpu_off_by_one.py", "cpu", "strict", log);
  ASSERT_TRUE(r.is_object()) << log;
  EXPECT_EQ(r["verdict"], "wrong_output");
  EXPECT_FALSE(r.contains("memory")) << "only correct candidates are measured";
}

struct GpuCase {
  std::string problem, solution, policy = "strict";
};

json gpu_record(const GpuCase& c) {
  std::string log;
  json r = eval_record(c.problem, c.solution, "cuda", c.policy, log);
  EXPECT_TRUE(r.is_object()) << log;
  return r;
}

TEST(MemoryGpu, OneGiBCudaMallocInsideTheExtension) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: CUPTI memory activity";
  json r = gpu_record({"problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cuda_malloc_1gib.py"});
  ASSERT_EQ(r["verdict"], "correct") << r.dump(2);
  const json& c = r["memory"]["candidate"];
  EXPECT_EQ(r["memory"]["method"], "cupti-memory+torch-allocator") << r["memory"].dump(2);
  EXPECT_TRUE(within_1pct(num(c, "non_torch_peak_bytes"), 1024 * MiB)) << c.dump(2);
  EXPECT_TRUE(within_1pct(num(c, "peak_bytes") - num(c, "torch_peak_bytes"), 1024 * MiB)) << c.dump(2);
  EXPECT_TRUE(has_finding(r, "non_torch_allocation")) << r["findings"].dump(2);
  EXPECT_FALSE(has_finding(r, "memory_leak")) << r["findings"].dump(2);
}

TEST(MemoryGpu, BufferKeptAcrossCallsIsPersistent) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: CUPTI memory activity";
  json r = gpu_record({"problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cuda_keep_512mib.py"});
  ASSERT_EQ(r["verdict"], "correct") << r.dump(2);
  const json& c = r["memory"]["candidate"];
  EXPECT_TRUE(within_1pct(num(c, "persistent_bytes"), 512 * MiB)) << c.dump(2);
  EXPECT_LT(std::fabs(num(c, "growth_bytes_per_call")), 0.01 * 512 * MiB) << c.dump(2);
  EXPECT_FALSE(has_finding(r, "memory_leak")) << r["findings"].dump(2);
}

TEST(MemoryGpu, LeakOf64MiBPerCall) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: CUPTI memory activity";
  json r = gpu_record({"problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cuda_leak_64mib.py"});
  ASSERT_EQ(r["verdict"], "correct") << r.dump(2);
  EXPECT_TRUE(within_1pct(num(r["memory"]["candidate"], "growth_bytes_per_call"), 64 * MiB)) << r["memory"].dump(2);
  EXPECT_TRUE(has_finding(r, "memory_leak")) << r["findings"].dump(2);
}

TEST(MemoryGpu, InPlaceEpilogueUsesOneOutputLessThanTheReference) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: CUPTI memory activity";
  json r = gpu_record({"problems/level2/12_Gemm_Multiply_LeakyReLU.py",
                       "examples/level2/12_Gemm_Multiply_LeakyReLU/cuda_inplace_epilogue.py"});
  ASSERT_EQ(r["verdict"], "correct") << r.dump(2);
  const json& m = r["memory"];
  // The reference holds two (4096, 8192) float32 intermediates at its peak, the candidate one.
  const double one_output = 4096.0 * 8192 * 4;
  EXPECT_TRUE(within_1pct(num(m["baselines"]["fp32"], "peak_bytes") - num(m["candidate"], "peak_bytes"), one_output))
      << m.dump(2);
  EXPECT_GT(num(m["ratio"], "fp32"), 1.0) << m.dump(2);
  EXPECT_GT(num(r["compute"], "own_share"), 0.0) << r["compute"].dump(2);
}

TEST(MemoryGpu, HonestKernelIsAllOwnCompute) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: CUPTI kernel records";
  json r = gpu_record({"problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cuda_honest.py"});
  ASSERT_EQ(r["verdict"], "correct") << r.dump(2);
  EXPECT_EQ(r["compute"]["method"], "cupti") << r["compute"].dump(2);
  EXPECT_DOUBLE_EQ(num(r["compute"], "own_share"), 1.0) << r["compute"].dump(2);
  EXPECT_FALSE(has_finding(r, "non_torch_allocation")) << r["findings"].dump(2);
}

TEST(MemoryGpu, AtenInTheWrapperIsNoCustomCompute) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: CUPTI kernel records";
  json r = gpu_record({"problems/level1/19_ReLU.py", "examples/level1/19_ReLU/cuda_aten_in_wrapper.py", "lenient"});
  EXPECT_EQ(r["verdict"], "rejected") << r.dump(2);
  EXPECT_TRUE(has_finding(r, "no_custom_compute")) << r["findings"].dump(2);
  EXPECT_DOUBLE_EQ(num(r["compute"], "own_share"), 0.0) << r["compute"].dump(2);
}

}  // namespace memory_test
