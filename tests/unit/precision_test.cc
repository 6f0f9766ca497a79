#include "supervisor/precision.h"

#include <gtest/gtest.h>

#include "record/record.h"

namespace kbv {
namespace precision_test {
using nlohmann::json;

json bf16_args() {
  return json::array({{{"kind", "tensor"}, {"dtype", "bfloat16"}, {"sizes", {4, 4}}},
                      {{"kind", "tensor"}, {"dtype", "int64"}, {"sizes", {4}}},
                      {{"kind", "value"}, {"value", 3}}});
}

TEST(Precision, NamesAndTolerances) {
  EXPECT_TRUE(valid_precision("fp32"));
  EXPECT_TRUE(valid_precision("bf16"));
  EXPECT_TRUE(valid_precision("fp16"));
  EXPECT_FALSE(valid_precision("fp8"));
  EXPECT_EQ(precision_dtype("bf16"), "bfloat16");
  EXPECT_EQ(precision_dtype("fp16"), "float16");
  EXPECT_EQ(precision_tolerance("fp32"), 1e-3);
  EXPECT_EQ(precision_tolerance("bf16"), 1e-2);
  EXPECT_EQ(precision_tolerance("fp16"), 1e-2);
}

TEST(Precision, SetPrecisionScalesToleranceAndEntersTheHash) {
  Protocol fp32;
  set_precision(fp32, "fp32");
  EXPECT_EQ(fp32.atol, 1e-3);
  EXPECT_EQ(fp32.rel_l2, 1e-3);
  Protocol bf16;
  set_precision(bf16, "bf16");
  EXPECT_EQ(bf16.precision, "bf16");
  EXPECT_EQ(bf16.atol, 1e-2);
  EXPECT_EQ(bf16.rtol, 1e-2);
  EXPECT_EQ(bf16.rel_l2, 1e-2);  // the relative-error floor follows the precision
  EXPECT_EQ(bf16.to_json()["precision"], "bf16");
  json env = {{"torch_version", "2.11"}};
  EXPECT_NE(protocol_hash(fp32, env), protocol_hash(bf16, env));
  Protocol fp16 = bf16;
  fp16.precision = "fp16";
  EXPECT_NE(protocol_hash(fp16, env), protocol_hash(bf16, env));
  // The upstream protocol's 1e-2 stays 1e-2.
  Protocol kb = kernelbench_protocol();
  set_precision(kb, "bf16");
  EXPECT_EQ(kb.atol, 1e-2);
}

TEST(Precision, DtypeFallbackFromTorchMessages) {
  for (const char* error : {
           "ModelNew.forward raised: RuntimeError: expected scalar type Float but found BFloat16",
           "ModelNew.forward raised: RuntimeError: Expected x.scalar_type() == at::kFloat to be true, but got false.",
           "ModelNew.forward raised: RuntimeError: input must be float32",
           "ModelNew.forward raised: RuntimeError: \"relu_cpu\" not implemented for 'BFloat16'",
           "ModelNew.forward raised: RuntimeError: mat1 and mat2 must have the same dtype, but got Float and BFloat16",
       }) {
    auto m = dtype_fallback_message(error, "bf16", bf16_args());
    ASSERT_TRUE(m) << error;
    EXPECT_NE(m->find("does not accept bfloat16 inputs"), std::string::npos) << *m;
    EXPECT_NE(m->find("AT_DISPATCH"), std::string::npos) << *m;
    // The original text is kept so the user sees what failed.
    EXPECT_NE(m->find(std::string(error).substr(26)), std::string::npos) << *m;
  }
}

TEST(Precision, DtypeFallbackOnlyWhereItApplies) {
  const std::string float_error = "RuntimeError: expected scalar type Float but found BFloat16";
  // fp32 runs: never.
  EXPECT_FALSE(dtype_fallback_message(float_error, "fp32", bf16_args()));
  // No reduced-precision input was handed over (integer inputs only): not a dtype fallback.
  json ints = json::array({{{"kind", "tensor"}, {"dtype", "int64"}, {"sizes", {4}}}});
  EXPECT_FALSE(dtype_fallback_message(float_error, "bf16", ints));
  // Another failure on bf16 inputs stays what it was.
  EXPECT_FALSE(dtype_fallback_message("RuntimeError: shape mismatch: [4] vs [5]", "bf16", bf16_args()));
  // Inputs nested in a list count.
  json nested = json::array({{{"kind", "list"}, {"items", {{{"kind", "tensor"}, {"dtype", "float16"}}}}}});
  auto m = dtype_fallback_message("RuntimeError: \"k\" not implemented for 'Half'", "fp16", nested);
  ASSERT_TRUE(m);
  EXPECT_NE(m->find("does not accept float16 inputs"), std::string::npos) << *m;
}

TEST(Precision, ReferenceErrorKeepsTheWorstDrawPerOutput) {
  json worst;
  merge_reference_error(worst, json::array({{{"output", 0}, {"tolerance_used", 0.2}},
                                            {{"output", 1}, {"tolerance_used", 0.5}}}),
                        "D1");
  merge_reference_error(worst, json::array({{{"output", 0}, {"tolerance_used", 0.7}},
                                            {{"output", 1}, {"tolerance_used", 0.1}}}),
                        "D2");
  ASSERT_EQ(worst.size(), 2u);
  EXPECT_EQ(worst[0]["tolerance_used"], 0.7);
  EXPECT_EQ(worst[0]["distribution"], "D2");
  EXPECT_EQ(worst[1]["tolerance_used"], 0.5);
  EXPECT_EQ(worst[1]["distribution"], "D1");
}

TEST(Precision, RecordPrecisionDefaultsToFp32) {
  auto record_precision = [](const json& j) { return record_from_json(j).record.precision_or_default(); };
  EXPECT_EQ(record_precision(json::object()), "fp32");
  EXPECT_EQ(record_precision(json{{"protocol", {{"precision", "fp16"}}}}), "fp16");
  EXPECT_EQ(record_precision(json{{"precision", "bf16"}}), "bf16");
}

}  // namespace precision_test
}  // namespace kbv
