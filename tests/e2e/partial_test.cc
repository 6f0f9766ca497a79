// End-to-end (issue 29): the runtime audit does not reject an honest partial replacement at a size
// where its own code is a few per mille of the forward's time, and still rejects the fallbacks
// at that size: a dummy own call whose result is dropped (the ablation), a C++ wrapper handing
// its work to ATen (the own calls' replayed share). problems/level2/12 at batch 64, in_features 16384, out_features 1024
// (tests/data/partial). docs/results/2026-12-05-partial.md has the same at four sizes.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace partial_test {

using kbv::e2e::kSource;
using kbv::e2e::Outcome;
using kbv::e2e::run_kbv;

const char* kProblem = "tests/data/partial/12_Gemm_Multiply_LeakyReLU_b64_k16384_n1024.py";
const char* kDir = "examples/level2/12_Gemm_Multiply_LeakyReLU/";

json eval(const std::string& solution) {
  fs::path out = kbv::e2e::scratch_dir("partial", fs::path(solution).stem().string()) / "record.json";
  Outcome o = run_kbv({"eval", "--problem", (kSource / kProblem).string(), "--solution",
                       (kSource / kDir / solution).string(), "--device", "cpu", "--trials", "1", "--timing", "off",
                       "--json", out.string()},
                      out);
  EXPECT_EQ(o.code, 0) << o.output;
  return o.record;
}

bool rejected_by(const json& record, const std::string& rule) {
  for (const auto& f : record.value("findings", json::array()))
    if (f.value("rule", "") == rule && f.value("severity", "") == "reject") return true;
  return false;
}

TEST(PartialReplacement, HonestEpilogueUnderThreePercentIsCorrect) {
  json r = eval("cpu_honest_torch_gemm.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["verdict"], "correct") << r["message"] << "\n" << r.value("findings", json::array()).dump(2);
  ASSERT_TRUE(r.contains("compute")) << r.dump(2);
  const json& c = r["compute"];
  // The own epilogue is a small part of the forward (the GEMM is PyTorch's): the measurement says so.
  ASSERT_TRUE(c.contains("forward_own_share")) << c.dump(2);
  EXPECT_LT(c["forward_own_share"].get<double>(), 0.03) << c.dump(2);
  EXPECT_GT(c["forward_own_share"].get<double>(), 0.0) << c.dump(2);
  // Replayed alone, the own call is own code; the ablation sees it reach every output element.
  EXPECT_EQ(c["scope"], "own_calls") << c.dump(2);
  EXPECT_GT(c["own_share"].get<double>(), 0.5) << c.dump(2);
  const json& a = r["audit"]["ablation"];
  EXPECT_TRUE(a.value("ran", false)) << a.dump(2);
  EXPECT_EQ(a["outputs"][0]["changed"], a["outputs"][0]["numel"]) << a.dump(2);
}

TEST(PartialReplacement, FallbacksAtTheSameSizeAreRejected) {
  // The own result computed, then dropped: as much own code as the honest one, none of it reaching the output.
  json dummy = eval("cpu_dummy_epilogue.py");
  ASSERT_TRUE(dummy.is_object());
  EXPECT_EQ(dummy["verdict"], "rejected") << dummy["message"];
  EXPECT_TRUE(rejected_by(dummy, "no_custom_compute")) << dummy.value("findings", json::array()).dump(2);
  EXPECT_EQ(dummy["audit"]["ablation"]["outputs"][0]["changed"], 0) << dummy["audit"].dump(2);
  // A C++ forwarding wrapper: its result is the output, its replayed own calls are library code.
  json wrapper = eval("cpu_fnptr_wrapper.py");
  ASSERT_TRUE(wrapper.is_object());
  EXPECT_EQ(wrapper["verdict"], "rejected") << wrapper["message"];
  EXPECT_TRUE(rejected_by(wrapper, "no_custom_compute")) << wrapper.value("findings", json::array()).dump(2);
  ASSERT_TRUE(wrapper.contains("compute")) << wrapper.dump(2);
  EXPECT_EQ(wrapper["compute"]["scope"], "own_calls") << wrapper["compute"].dump(2);
  EXPECT_LT(wrapper["compute"]["own_share"].get<double>(), 0.03) << wrapper["compute"].dump(2);
}

}  // namespace partial_test
