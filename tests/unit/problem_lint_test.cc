// Findings of `kbv lint-problems` from the reference worker's statistics (no worker involved).
#include "supervisor/problem_lint.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kbv {
namespace problem_lint_test {

using nlohmann::json;

const std::vector<Distribution> kDists = {{"D1", 1.0}, {"D2", 3.0}, {"D3", 0.01}, {"D4", -1.0}};
const char kPath[] = "problems/level1/7_Example.py";

json failed_comparison(double rel_l2, int64_t mismatches, int64_t numel) {
  return {{"passed", false}, {"numel", numel}, {"mismatches", mismatches}, {"max_abs_error", 0.5},
          {"rel_l2_error", rel_l2}, {"reason", "1 of 4 elements differ; first at [0]: expected 1, got 2"}};
}

json passed_comparison(double rel_l2, int64_t numel) {
  return {{"passed", true}, {"numel", numel}, {"mismatches", 0}, {"max_abs_error", 1e-6}, {"rel_l2_error", rel_l2}};
}

// An output that judges kernels well: every probe fails by a wide margin.
json good_output(int64_t numel = 1024) {
  json repeat = passed_comparison(0.0, numel);
  repeat["bitwise_equal"] = true;
  json other = failed_comparison(0.4, numel / 2, numel);
  other["bitwise_equal"] = false;
  json constant = failed_comparison(0.3, numel / 2, numel);
  constant["value"] = 0.5;
  return {{"index", 0},      {"dtype", "float32"}, {"sizes", {numel}},   {"numel", numel},
          {"repeat", repeat}, {"nan", {0, 0}},      {"inf", {0, 0}},      {"mean", 0.5},
          {"std", 0.29},      {"max_abs", 1.0},     {"other_draw", other}, {"zeros", failed_comparison(1.0, numel, numel)},
          {"constant", constant}};
}

json reply_with(const json& output) {
  return {{"ok", true},
          {"inputs", json::array({{{"index", 0}, {"dtype", "float32"}, {"sizes", {1024}}, {"floating", true},
                                   {"integer_valued", false}}})},
          {"outputs", json::array({output})},
          {"dropout", json::array()},
          {"allow", json::object()},
          {"training", true}};
}

std::vector<ProblemDraw> draws_with(const std::function<json(const Distribution&)>& output_for) {
  std::vector<ProblemDraw> draws;
  for (const auto& d : kDists) draws.push_back({d, reply_with(output_for(d)), ""});
  return draws;
}

const ProblemFinding* find(const std::vector<ProblemFinding>& findings, const std::string& rule) {
  for (const auto& f : findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

TEST(ProblemLint, GoodProblemIsClean) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution&) { return good_output(); }));
  EXPECT_TRUE(findings.empty()) << findings[0].message;
  EXPECT_TRUE(problems_clean(findings));
}

TEST(ProblemLint, ZerosPassingIsAFindingNamingFileDistributionsAndNumbers) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution& d) {
    json o = good_output();
    if (d.name == "D3") {
      o["zeros"] = passed_comparison(-1.0, 1024);
      o["max_abs"] = 0.0004;
    }
    return o;
  }));
  const ProblemFinding* f = find(findings, "zeros");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "finding");
  EXPECT_EQ(f->distributions, std::vector<std::string>{"D3"});
  EXPECT_NE(f->message.find(kPath), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("D3 (x0.01)"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("0.0004"), std::string::npos) << f->message;
  EXPECT_FALSE(problems_clean(findings));
  EXPECT_EQ(find(findings, "constant"), nullptr) << "a passing constant is implied by passing zeros";
}

TEST(ProblemLint, ZerosWithinElementwiseToleranceOnlyIsANote) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution&) {
    json o = good_output();
    o["zeros"] = failed_comparison(1.0, 0, 1024);  // only the relative-L2 floor rejects zeros
    return o;
  }));
  const ProblemFinding* f = find(findings, "zeros_elementwise");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "note");
  EXPECT_EQ(f->distributions.size(), 4u);
  EXPECT_TRUE(problems_clean(findings));
}

TEST(ProblemLint, FitPowerRecoversAPowerLaw) {
  PowerFit f = fit_power({{1e3, 2.0 * std::pow(1e3, -0.5)}, {1e5, 2.0 * std::pow(1e5, -0.5)}, {1e6, 2.0 / 1e3}});
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.exponent, -0.5, 1e-12);
  EXPECT_NEAR(f.coefficient, 2.0, 1e-9);
  EXPECT_NEAR(f.max_residual, 0.0, 1e-12);
  EXPECT_NEAR(f.at(1e8), 2e-4, 1e-12);
  EXPECT_FALSE(fit_power({{1e3, 1.0}}).ok) << "one point fits nothing";
  EXPECT_FALSE(fit_power({{1e3, 1.0}, {1e3, 2.0}}).ok) << "one size fits nothing";
  EXPECT_FALSE(fit_power({{1e3, 0.0}, {1e4, 0.0}}).ok) << "zero magnitudes have no logarithm";
}

// L1/37 (x / ||x||_F over the whole 112x64x512x512 tensor) at reduced sizes: the largest output
// is sqrt(3/N) for N uniform elements, 1.7e-3 at 16x16x64x64, above atol 1e-3, so the reduced run
// sees no zeros pass; at the file's 1.9e9 elements it is 4e-5. The lint extrapolates from the
// reduced sizes and says so, as a note naming the points and the prediction.
json extrapolating_output(std::vector<std::pair<int64_t, double>> points, int64_t file_numel) {
  json o = good_output();
  json p = json::array();
  for (const auto& [n, m] : points) p.push_back({n, m});
  o["extrapolation"] = {{"points", p}, {"file_input_numel", file_numel}, {"atol", 1e-3}, {"rtol", 1e-3},
                        {"rel_l2", true}};
  return o;
}

TEST(ProblemLint, ZerosPassAtTheFilesSizeExtrapolatedIsANoteSayingFromWhat) {
  auto frobenius = [](int64_t n) { return std::sqrt(3.0 / static_cast<double>(n)); };
  auto findings = problem_findings(kPath, draws_with([&](const Distribution& d) {
    if (d.name != "D1") return good_output();
    return extrapolating_output({{1048576, frobenius(1048576)}, {524288, frobenius(524288) * 1.01},
                                 {262144, frobenius(262144) * 0.99}},
                                int64_t{112} * 64 * 512 * 512);
  }));
  const ProblemFinding* f = find(findings, "zeros_extrapolated");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "note");
  EXPECT_EQ(f->distributions, std::vector<std::string>{"D1"});
  EXPECT_NE(f->message.find("extrapolated"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("1879048192 input elements"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("at 1048576 input elements"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("^-0.493"), std::string::npos) << f->message;  // least squares over the three
  EXPECT_NE(f->message.find("about 4.24e-05"), std::string::npos) << f->message;
  EXPECT_TRUE(problems_clean(findings)) << "a prediction is a note, not a finding";
}

TEST(ProblemLint, NoZerosExtrapolationWhereTheMagnitudeHoldsOrStraysOrStaysAboveTolerance) {
  const int64_t file = int64_t{112} * 64 * 512 * 512;
  const std::vector<std::vector<std::pair<int64_t, double>>> cases = {
      {{1048576, 1.0}, {524288, 0.999}, {262144, 1.0}},          // x / max|x|: the scale stays
      {{1048576, 1.7e-3}, {524288, 4e-3}, {262144, 3.4e-3}},     // not one power of the size
      {{1048576, 0.5}, {524288, 0.52}, {262144, 0.54}},          // falls, but stays far above atol
  };
  for (const auto& points : cases) {
    auto findings = problem_findings(kPath, draws_with([&](const Distribution& d) {
      return d.name == "D1" ? extrapolating_output(points, file) : good_output();
    }));
    EXPECT_EQ(find(findings, "zeros_extrapolated"), nullptr) << points[1].second;
  }
}

TEST(ProblemLint, ReplayAndConstantPassing) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution& d) {
    json o = good_output();
    if (d.name != "D2") {
      o["other_draw"] = passed_comparison(6e-4, 1024);
      o["other_draw"]["bitwise_equal"] = false;
      o["constant"] = passed_comparison(3e-4, 1024);
      o["constant"]["value"] = 6.97;
    }
    return o;
  }));
  const ProblemFinding* replay = find(findings, "insensitive");
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(replay->distributions, (std::vector<std::string>{"D1", "D3", "D4"}));
  EXPECT_NE(replay->message.find("0.0006"), std::string::npos) << replay->message;
  const ProblemFinding* constant = find(findings, "constant");
  ASSERT_NE(constant, nullptr);
  EXPECT_NE(constant->message.find("6.97"), std::string::npos) << constant->message;
}

TEST(ProblemLint, UniformOutputUnderOneDistributionIsANote) {
  // ReLU under D4: the expected output is all zeros, so zeros, replays and constants pass there.
  auto uniform = [](json o) {
    o["std"] = 0.0;
    o["mean"] = 0.0;
    o["zeros"] = passed_comparison(-1.0, 1024);
    o["other_draw"] = passed_comparison(-1.0, 1024);
    o["other_draw"]["bitwise_equal"] = true;
    return o;
  };
  auto some = problem_findings(kPath, draws_with([&](const Distribution& d) {
    return d.name == "D4" ? uniform(good_output()) : good_output();
  }));
  EXPECT_TRUE(problems_clean(some));
  ASSERT_NE(find(some, "uniform_output"), nullptr);
  EXPECT_EQ(find(some, "uniform_output")->distributions, std::vector<std::string>{"D4"});
  EXPECT_EQ(find(some, "zeros"), nullptr);

  auto all = problem_findings(kPath, draws_with([&](const Distribution&) { return uniform(good_output()); }));
  EXPECT_FALSE(problems_clean(all));
  ASSERT_NE(find(all, "insensitive"), nullptr);
  EXPECT_NE(find(all, "insensitive")->message.find("bit-identical"), std::string::npos);
  EXPECT_NE(find(all, "zeros"), nullptr);
}

TEST(ProblemLint, UniformOutputStillReportsNaNAndNondeterminism) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution& d) {
    json o = good_output();
    if (d.name == "D4") {
      o["std"] = 0.0;  // the finite elements are one value, the others NaN
      o["nan"] = {7, 7};
      o["repeat"] = failed_comparison(1.0, 7, 1024);
      o["zeros"] = passed_comparison(-1.0, 1024);
    }
    return o;
  }));
  EXPECT_NE(find(findings, "uniform_output"), nullptr);
  ASSERT_NE(find(findings, "nonfinite"), nullptr);
  EXPECT_EQ(find(findings, "nonfinite")->distributions, std::vector<std::string>{"D4"});
  EXPECT_NE(find(findings, "nondeterministic"), nullptr);
  EXPECT_EQ(find(findings, "zeros"), nullptr);
}

TEST(ProblemLint, ScalarOutputIsNeverExcusedAsUniform) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution& d) {
    json o = good_output(1);
    o["std"] = 0.0;
    if (d.name == "D3") o["constant"] = passed_comparison(1e-4, 1);
    return o;
  }));
  ASSERT_NE(find(findings, "constant"), nullptr);
  EXPECT_EQ(find(findings, "uniform_output"), nullptr);
}

TEST(ProblemLint, NonFiniteAndNondeterminism) {
  auto findings = problem_findings(kPath, draws_with([](const Distribution& d) {
    json o = good_output();
    if (d.name == "D4") o["nan"] = {12, 9};
    if (d.name == "D1") {
      o["repeat"] = failed_comparison(0.2, 3, 1024);
      o["repeat"]["bitwise_equal"] = false;
    }
    if (d.name == "D2") o["repeat"]["bitwise_equal"] = false;
    return o;
  }));
  const ProblemFinding* nf = find(findings, "nonfinite");
  ASSERT_NE(nf, nullptr);
  EXPECT_EQ(nf->distributions, std::vector<std::string>{"D4"});
  EXPECT_NE(nf->message.find("12 NaN"), std::string::npos) << nf->message;
  const ProblemFinding* nd = find(findings, "nondeterministic");
  ASSERT_NE(nd, nullptr);
  EXPECT_NE(nd->message.find("expected 1, got 2"), std::string::npos) << nd->message;
  const ProblemFinding* bits = find(findings, "nondeterministic_bits");
  ASSERT_NE(bits, nullptr);
  EXPECT_EQ(bits->severity, "note");
}

TEST(ProblemLint, DropoutIntegerInputsAndIntegerValuedFloats) {
  auto draws = draws_with([](const Distribution&) { return good_output(); });
  for (auto& d : draws) {
    d.reply["dropout"] = {"drop (Dropout, p=0.5)"};
    d.reply["inputs"] = {{{"index", 0}, {"dtype", "float32"}, {"sizes", {8, 4}}, {"floating", true},
                          {"integer_valued", true}},
                         {{"index", 1}, {"dtype", "int64"}, {"sizes", {8}}, {"floating", false}}};
  }
  auto findings = problem_findings(kPath, draws);
  ASSERT_NE(find(findings, "dropout"), nullptr);
  EXPECT_NE(find(findings, "dropout")->message.find("drop (Dropout, p=0.5)"), std::string::npos);
  const ProblemFinding* iv = find(findings, "integer_valued_float");
  ASSERT_NE(iv, nullptr);
  EXPECT_NE(iv->message.find("input 0 (float32 [8, 4])"), std::string::npos) << iv->message;
  const ProblemFinding* ii = find(findings, "integer_input");
  ASSERT_NE(ii, nullptr);
  EXPECT_EQ(ii->severity, "note");
  EXPECT_NE(ii->message.find("input 1 (int64 [8])"), std::string::npos) << ii->message;
}

// Upstream's harness casts every input tensor to float32, integer targets included.
TEST(ProblemLint, UpstreamCastFailureOrChangeIsSaidAndAgreementIsSilent) {
  auto with_cast = [](const json& cast) {
    auto draws = draws_with([](const Distribution&) { return good_output(); });
    for (auto& d : draws) {
      d.reply["inputs"] = {{{"index", 0}, {"dtype", "float32"}, {"sizes", {8, 4}}, {"floating", true},
                            {"integer_valued", false}},
                           {{"index", 1}, {"dtype", "int64"}, {"sizes", {8}}, {"floating", false}}};
      d.reply["upstream_cast"] = cast;
    }
    return problem_findings(kPath, draws);
  };
  auto failing = with_cast({{"dtype", "float32"}, {"failed", "its forward failed: RuntimeError: expected scalar type Long"}});
  const ProblemFinding* f = find(failing, "upstream_cast");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "note");
  EXPECT_TRUE(f->distributions.empty());
  EXPECT_NE(f->message.find(kPath), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("casts every input tensor to float32"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("the reference fails"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("expected scalar type Long"), std::string::npos) << f->message;
  EXPECT_NE(find(failing, "integer_input"), nullptr);
  EXPECT_TRUE(problems_clean(failing)) << "kbv passes integers as they are: the problem judges kernels here";

  auto differs = with_cast({{"dtype", "float32"}, {"comparisons", json::array({failed_comparison(0.7, 8, 8)})}});
  const ProblemFinding* d = find(differs, "upstream_cast");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("computes something else"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("relative L2 0.7"), std::string::npos) << d->message;

  auto same = with_cast({{"dtype", "float32"}, {"comparisons", json::array({passed_comparison(0.0, 8)})}});
  EXPECT_EQ(find(same, "upstream_cast"), nullptr);
}

TEST(ProblemLint, AllowedFindingsKeepTheReasonAndUnusedAllowsAreNoted) {
  auto draws = draws_with([](const Distribution&) {
    json o = good_output();
    o["constant"] = passed_comparison(3e-4, 1024);
    return o;
  });
  for (auto& d : draws) d.reply["allow"] = {{"constant", "a scalar loss"}, {"zeros", "never seen"}};
  auto findings = problem_findings(kPath, draws);
  const ProblemFinding* c = find(findings, "constant");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->allowed, "a scalar loss");
  EXPECT_TRUE(problems_clean(findings));
  const ProblemFinding* unused = find(findings, "unused_allow");
  ASSERT_NE(unused, nullptr);
  EXPECT_NE(unused->message.find("'zeros'"), std::string::npos);
  EXPECT_EQ(c->to_json()["allowed"], "a scalar loss");
}

TEST(ProblemLint, ReferenceFailureAndBadAllowAreFindings) {
  auto draws = draws_with([](const Distribution&) { return good_output(); });
  draws[3].reply = json();
  draws[3].failure = "the reference Model's forward failed: ValueError: negative input";
  for (auto& d : draws)
    if (d.failure.empty()) d.reply["allow_error"] = "KBV_LINT_ALLOW must be a dict {\"rule\": \"reason\"}";
  auto findings = problem_findings(kPath, draws);
  const ProblemFinding* pe = find(findings, "problem_error");
  ASSERT_NE(pe, nullptr);
  EXPECT_EQ(pe->distributions, std::vector<std::string>{"D4"});
  EXPECT_NE(pe->message.find("negative input"), std::string::npos) << pe->message;
  EXPECT_NE(find(findings, "allow_error"), nullptr);
  EXPECT_FALSE(problems_clean(findings));
}

TEST(ProblemLint, Fp16OverflowOnlyWhereTheFp32ReferenceIsFinite) {
  auto draws = draws_with([](const Distribution& d) {
    json o = good_output();
    o["reference_error"] = {{"output", 0}, {"nonfinite", d.name == "D2" ? 7 : 0}, {"tolerance_used", 0.2}};
    if (d.name == "D2") o["inf"] = {7, 5};
    return o;
  });
  for (auto& d : draws) d.reply["precision"] = "fp16";
  auto findings = problem_findings(kPath, draws);
  const ProblemFinding* f = find(findings, "overflow");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "finding");
  EXPECT_EQ(f->distributions, std::vector<std::string>{"D2"});
  EXPECT_NE(f->message.find("fp16 reference overflows"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("7 of 1024"), std::string::npos) << f->message;
  EXPECT_FALSE(problems_clean(findings));
  // fp32 lints carry no reference_error: no overflow rule.
  EXPECT_EQ(find(problem_findings(kPath, draws_with([](const Distribution&) { return good_output(); })), "overflow"),
            nullptr);
}

}  // namespace problem_lint_test
}  // namespace kbv
