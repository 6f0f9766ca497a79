// Precision modes, the worker's half: casting and the reference's own error (CPU, bf16 and fp16).
#include "check/precision.h"

#include <gtest/gtest.h>

namespace kbv {
namespace precision_test {

TEST(PrecisionCast, FloatingInputsCastIntegersUntouched) {
  at::Tensor f = at::rand({8});
  at::Tensor i = at::arange(8);
  at::Tensor b = at::ones({3}, at::kBool);
  EXPECT_EQ(cast_floating(f, at::kBFloat16).scalar_type(), at::kBFloat16);
  EXPECT_EQ(cast_floating(f, at::kHalf).scalar_type(), at::kHalf);
  EXPECT_EQ(cast_floating(at::rand({2}, at::kDouble), at::kBFloat16).scalar_type(), at::kBFloat16);
  EXPECT_EQ(cast_floating(i, at::kBFloat16).scalar_type(), at::kLong);
  EXPECT_TRUE(cast_floating(i, at::kBFloat16).equal(i));
  EXPECT_EQ(cast_floating(b, at::kHalf).scalar_type(), at::kBool);
  EXPECT_EQ(*precision_scalar_type("bf16"), at::kBFloat16);
  EXPECT_EQ(*precision_scalar_type("fp16"), at::kHalf);
  EXPECT_EQ(*precision_scalar_type("fp32"), at::kFloat);
  EXPECT_FALSE(precision_scalar_type("int8"));
}

TEST(PrecisionTolerance, Bf16MatmulPassesAt1e2NotAt1e3) {
  // A bf16 GEMM (CPU) against the same GEMM in fp32 on the same cast-back inputs: within the
  // bf16 tolerance 1e-2 relative L2, far outside fp32's 1e-3 elementwise.
  at::manual_seed(0);
  at::Tensor a = at::rand({64, 256}).to(at::kBFloat16), b = at::rand({256, 64}).to(at::kBFloat16);
  at::Tensor reduced = at::matmul(a, b);
  at::Tensor fp32 = at::matmul(a.to(at::kFloat), b.to(at::kFloat));
  Tolerance bf16_tol{1e-2, 1e-2, 1e-2, true}, fp32_tol{1e-3, 1e-3, 1e-3, true};
  nlohmann::json e = reference_error(reduced, fp32, bf16_tol);
  EXPECT_EQ(e["dtype"], "bfloat16");
  EXPECT_GT(e["max_abs_error"].get<double>(), 0.0);
  EXPECT_LT(e["rel_l2_error"].get<double>(), 1e-2) << e.dump();
  EXPECT_GT(e["tolerance_used"].get<double>(), 0.0);
  EXPECT_LE(e["tolerance_used"].get<double>(), 1.0) << e.dump();
  EXPECT_EQ(e["mismatches"], 0) << e.dump();
  nlohmann::json strict = reference_error(reduced, fp32, fp32_tol);
  EXPECT_GT(strict["tolerance_used"].get<double>(), 1.0) << strict.dump();
  EXPECT_GT(strict["mismatches"].get<int64_t>(), 0);
  // The comparison the protocol makes (dtype must match: a bf16 reference wants bf16 outputs).
  EXPECT_TRUE(compare_tensors(reduced, fp32.to(at::kBFloat16), bf16_tol).passed);
  EXPECT_FALSE(compare_tensors(reduced, fp32, bf16_tol).passed);
}

TEST(PrecisionTolerance, Fp16OverflowIsCounted) {
  at::Tensor x = at::full({4}, 300.0f);
  at::Tensor fp32 = x * x;                        // 90000: finite in fp32
  at::Tensor reduced = x.to(at::kHalf) * x.to(at::kHalf);  // above fp16's 65504: Inf
  Tolerance tol{1e-2, 1e-2, 1e-2, true};
  nlohmann::json e = reference_error(reduced, fp32, tol);
  EXPECT_EQ(e["nonfinite"], 4) << e.dump();
  nlohmann::json fine = reference_error(x.to(at::kHalf) + 1, x + 1, tol);
  EXPECT_EQ(fine["nonfinite"], 0);
  EXPECT_EQ(fine["tolerance_used"].get<double>(), 0.0);
}

TEST(PrecisionTolerance, NonFloatingOutputsAreNoted) {
  Tolerance tol;
  nlohmann::json e = reference_error(at::arange(4), at::arange(4), tol);
  EXPECT_TRUE(e.contains("note"));
  nlohmann::json s = reference_error(at::rand({2}).to(at::kHalf), at::rand({3}), tol);
  EXPECT_TRUE(s.contains("note"));
}

}  // namespace precision_test
}  // namespace kbv
