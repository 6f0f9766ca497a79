#include "check/compare.h"

#include <gtest/gtest.h>
#include <limits>

namespace kbv {
namespace {

TEST(Compare, IdenticalPasses) {
  at::Tensor e = at::rand({4, 8});
  Comparison c = compare_tensors(e, e.clone(), Tolerance{});
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.max_abs_error, 0.0);
}

TEST(Compare, ShapeAndDtypeMismatch) {
  at::Tensor e = at::zeros({4, 8});
  Comparison s = compare_tensors(e, at::zeros({8, 4}), Tolerance{});
  EXPECT_FALSE(s.passed);
  EXPECT_NE(s.reason.find("shape [8, 4] where the reference gives [4, 8]"), std::string::npos) << s.reason;
  Comparison d = compare_tensors(e, at::zeros({4, 8}, at::kDouble), Tolerance{});
  EXPECT_FALSE(d.passed);
  EXPECT_NE(d.reason.find("dtype"), std::string::npos);
}

TEST(Compare, FirstBadIndexAndValues) {
  at::Tensor e = at::ones({3, 5});
  at::Tensor a = e.clone();
  a[1][3] = 1.5;
  a[2][0] = 2.0;
  Comparison c = compare_tensors(e, a, Tolerance{});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.mismatches, 2);
  ASSERT_EQ(c.first_bad_index, (std::vector<int64_t>{1, 3}));
  EXPECT_DOUBLE_EQ(c.expected_value, 1.0);
  EXPECT_DOUBLE_EQ(c.actual_value, 1.5);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 1.0);
}

TEST(Compare, ToleranceBoundary) {
  at::Tensor e = at::full({10}, 2.0, at::kDouble);
  // Elementwise: atol + rtol*|e| = 1e-3 + 2e-3 = 3e-3.
  Tolerance elementwise{1e-3, 1e-3, 1e-3, false};
  EXPECT_TRUE(compare_tensors(e, e + 2.9e-3, elementwise).passed);
  EXPECT_FALSE(compare_tensors(e, e + 3.1e-3, elementwise).passed);
  // The L2 criterion is stricter here: 2.9e-3 / 2 = 1.45e-3 relative.
  Comparison l2 = compare_tensors(e, e + 2.9e-3, Tolerance{});
  EXPECT_FALSE(l2.passed);
  EXPECT_NEAR(l2.rel_l2_error, 1.45e-3, 1e-9);
  EXPECT_TRUE(compare_tensors(e, e + 1.9e-3, Tolerance{}).passed);
}

TEST(Compare, AllZeroAnswerToTinyReferenceFailsOnL2Floor) {
  // A softmax over a very wide row: every value ~1/65536 < atol.
  at::Tensor e = at::softmax(at::rand({4, 65536}), 1);
  at::Tensor zeros = at::zeros_like(e);
  Comparison c = compare_tensors(e, zeros, Tolerance{});
  EXPECT_EQ(c.mismatches, 0);  // elementwise, zeros pass
  EXPECT_FALSE(c.passed);      // the L2 floor catches them
  EXPECT_NEAR(c.rel_l2_error, 1.0, 1e-9);
  EXPECT_NE(c.reason.find("relative L2 error"), std::string::npos);
  // The legacy allclose protocol lets it through, as upstream KernelBench does.
  Tolerance legacy{1e-2, 1e-2, 1e-2, false};
  EXPECT_TRUE(compare_tensors(e, zeros, legacy).passed);
}

TEST(Compare, NanAndInfOnlyWhereTheReferenceHasThem) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor e = at::tensor({1.0, nan, inf, -inf}, at::kDouble);
  EXPECT_TRUE(compare_tensors(e, e.clone(), Tolerance{}).passed);
  at::Tensor a = e.clone();
  a[2] = -inf;  // wrong sign of Inf
  EXPECT_FALSE(compare_tensors(e, a, Tolerance{}).passed);
  at::Tensor b = e.clone();
  b[1] = 0.0;  // a number where the reference has NaN
  EXPECT_FALSE(compare_tensors(e, b, Tolerance{}).passed);
  at::Tensor c = e.clone();
  c[0] = nan;  // NaN where the reference has a number
  Comparison r = compare_tensors(e, c, Tolerance{});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.first_bad_index, (std::vector<int64_t>{0}));
}

TEST(Compare, IntegersExact) {
  at::Tensor e = at::arange(10, at::kLong);
  EXPECT_TRUE(compare_tensors(e, e.clone(), Tolerance{}).passed);
  at::Tensor a = e.clone();
  a[7] = 8;
  Comparison c = compare_tensors(e, a, Tolerance{});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.first_bad_index, (std::vector<int64_t>{7}));
}

TEST(Compare, ZeroReferenceUsesElementwiseOnly) {
  at::Tensor e = at::zeros({16});
  Comparison c = compare_tensors(e, at::full({16}, 1e-4), Tolerance{});
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_EQ(c.rel_l2_error, -1.0);
}

TEST(SameValues, DetectsMutationAndTreatsNanAsEqual) {
  at::Tensor a = at::rand({5});
  a[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(same_values(a, a.clone()));
  at::Tensor b = a.clone();
  b[0] = -b[0] - 1;
  EXPECT_FALSE(same_values(a, b));
  EXPECT_FALSE(same_values(a, a.to(at::kDouble)));
}

}  // namespace
}  // namespace kbv
