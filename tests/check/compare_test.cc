#include "check/compare.h"

#include <gtest/gtest.h>
#include <limits>

namespace kbv {
namespace compare_test {

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

// The comparison runs in chunks so that its float64 temporaries stay small on multi-GiB outputs:
// every chunk size gives the whole-tensor answer (counts, first index, values, norms), also on a
// non-contiguous output, with NaN, Inf and integers.
TEST(Compare, ChunkedEqualsWhole) {
  at::manual_seed(7);
  at::Tensor e = at::randn({37, 23}).t();  // non-contiguous: logical order must be kept
  at::Tensor a = e + 1e-5 * at::randn({23, 37});
  a[4][30] = 9.0;
  a[19][2] = -3.0;
  e[10][10] = std::numeric_limits<float>::quiet_NaN();
  a[10][10] = std::numeric_limits<float>::quiet_NaN();
  e[11][11] = std::numeric_limits<float>::infinity();
  a[11][11] = -std::numeric_limits<float>::infinity();
  Comparison whole = compare_tensors(e, a, Tolerance{}, int64_t{1} << 30);
  ASSERT_EQ(whole.mismatches, 3) << whole.reason;
  ASSERT_EQ(whole.first_bad_index, (std::vector<int64_t>{4, 30}));
  for (int64_t chunk : {1, 7, 64, 851, 10000}) {
    Comparison c = compare_tensors(e, a, Tolerance{}, chunk);
    EXPECT_EQ(c.mismatches, whole.mismatches) << "chunk " << chunk;
    EXPECT_EQ(c.first_bad_index, whole.first_bad_index) << "chunk " << chunk;
    EXPECT_DOUBLE_EQ(c.expected_value, whole.expected_value) << "chunk " << chunk;
    EXPECT_DOUBLE_EQ(c.actual_value, whole.actual_value) << "chunk " << chunk;
    EXPECT_DOUBLE_EQ(c.max_abs_error, whole.max_abs_error) << "chunk " << chunk;
    EXPECT_NEAR(c.rel_l2_error, whole.rel_l2_error, 1e-12 * whole.rel_l2_error) << "chunk " << chunk;
    EXPECT_EQ(c.reason, whole.reason) << "chunk " << chunk;
  }
  // The L2 floor is judged on the whole tensor, not per chunk.
  at::Tensor tiny = at::full({1000}, 1e-6);
  Comparison z = compare_tensors(tiny, at::zeros({1000}), Tolerance{}, 3);
  EXPECT_FALSE(z.passed);
  EXPECT_NEAR(z.rel_l2_error, 1.0, 1e-12);
  at::Tensor ints = at::arange(100, at::kLong);
  at::Tensor ints_bad = ints.clone();
  ints_bad[57] = -5;
  Comparison i = compare_tensors(ints, ints_bad, Tolerance{}, 8);
  EXPECT_EQ(i.first_bad_index, (std::vector<int64_t>{57}));
  EXPECT_DOUBLE_EQ(i.max_abs_error, 62.0);
}

TEST(FiniteStats, ChunkedEqualsWholeAndSkipsNonFinite) {
  at::manual_seed(3);
  at::Tensor t = at::randn({50, 41}) * 3 + 2;
  t[3][3] = std::numeric_limits<float>::quiet_NaN();
  t[7][1] = std::numeric_limits<float>::infinity();
  at::Tensor d = t.to(at::kDouble);
  at::Tensor vals = d.masked_select(d.isfinite());
  for (int64_t chunk : {1, 5, 333, 1 << 20}) {
    ValueStats s = finite_stats(t, chunk);
    EXPECT_EQ(s.count, 50 * 41 - 2) << "chunk " << chunk;
    EXPECT_NEAR(s.mean, vals.mean().item<double>(), 1e-12) << "chunk " << chunk;
    EXPECT_NEAR(s.std, vals.std().item<double>(), 1e-12) << "chunk " << chunk;
    EXPECT_DOUBLE_EQ(s.max_abs, vals.abs().max().item<double>()) << "chunk " << chunk;
  }
  ValueStats none = finite_stats(at::full({4}, std::numeric_limits<float>::quiet_NaN()));
  EXPECT_EQ(none.count, 0);
  ValueStats ints = finite_stats(at::arange(5, at::kLong), 2);
  EXPECT_EQ(ints.count, 5);
  EXPECT_DOUBLE_EQ(ints.mean, 2.0);
  EXPECT_DOUBLE_EQ(ints.max_abs, 4.0);
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

}  // namespace compare_test
}  // namespace kbv
