// The static analysis over the whole example corpus (examples/manifest.json), CPU and CUDA
// entries alike (linting compiles nothing): every entry with a `lint` rule is rejected by that
// rule, every other entry (every honest solution among them) gets no rejecting finding.
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "supervisor/run.h"
#include "util/fs.h"

namespace kbv {
namespace lint_corpus_test {

namespace fs = std::filesystem;
const fs::path kSource = KBV_SOURCE_DIR;

struct Entry {
  std::string solution, device, expected, cheat, lint, policy, precision, name;
};

void PrintTo(const Entry& e, std::ostream* os) { *os << e.solution << " (" << e.policy << ")"; }

std::vector<Entry> entries() {
  std::vector<Entry> out;
  FileText t = read_file(kSource / "examples" / "manifest.json");
  nlohmann::json m = nlohmann::json::parse(t.ok ? t.text : "[]", nullptr, false);
  if (!m.is_array()) return out;
  for (const auto& e : m) {
    Entry x{e.value("solution", ""), e.value("device", "cpu"), e.value("expected", ""),
            e["cheat"].is_string() ? e["cheat"].get<std::string>() : "", e.value("lint", ""),
            e.value("policy", "strict"), e.value("precision", "fp32"), ""};
    x.name = x.device + "_" + fs::path(x.solution).parent_path().filename().string() + "_" +
             fs::path(x.solution).stem().string() + (x.policy == "strict" ? "" : "_" + x.policy) +
             (x.precision == "fp32" ? "" : "_" + x.precision);
    for (char& c : x.name)
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    out.push_back(x);
  }
  return out;
}

std::string dump(const LintReport& r) {
  std::string s;
  for (const auto& f : r.findings) s += "  " + f.severity + " " + f.rule + " " + f.evidence_text() + ": " + f.message + "\n";
  return s.empty() ? "  (no findings)\n" : s;
}

class CorpusLint : public ::testing::TestWithParam<Entry> {};

TEST_P(CorpusLint, StaticVerdictAsExpected) {
  const Entry& e = GetParam();
  SolutionSource s = load_solution(kSource / e.solution);
  ASSERT_TRUE(s.ok) << s.error;
  LintReport strict = lint_candidate(s, kSource / e.solution, Policy::strict, e.precision);
  if (!e.lint.empty()) {
    bool found = false;
    for (const auto& f : strict.findings)
      found = found || (f.rule == e.lint && f.severity == "reject" && !f.cheat.empty());
    EXPECT_TRUE(found) << e.solution << " must be rejected by " << e.lint << ":\n" << dump(strict);
    EXPECT_EQ(e.expected, "rejected") << "an entry the static rules reject cannot expect anything else";
    EXPECT_EQ(e.policy, "strict");
  } else if (e.policy == "strict") {
    EXPECT_FALSE(strict.rejected()) << e.solution << " (" << e.expected
                                    << ") must reach the runtime checks, but the static rules reject it:\n"
                                    << dump(strict);
  }
  if (e.cheat.empty() && e.expected == "correct") {
    EXPECT_FALSE(strict.rejected()) << "an honest solution is rejected:\n" << dump(strict);
  }
  if (e.cheat.empty() && e.precision != "fp32") {
    for (const auto& f : strict.findings)
      EXPECT_NE(f.rule, "precision_downgrade") << "computing in the evaluated " << e.precision
                                               << " is no downgrade: " << f.message;
  }
  LintReport lenient = lint_candidate(s, kSource / e.solution, Policy::lenient, e.precision);
  EXPECT_FALSE(lenient.rejected()) << "the lenient policy never rejects statically";
  for (const auto& f : strict.findings) {
    EXPECT_NE(f.evidence_text().find(":"), std::string::npos);
    EXPECT_GT(f.line, 0) << f.rule;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CorpusLint, ::testing::ValuesIn(entries()),
                         [](const ::testing::TestParamInfo<Entry>& i) { return i.param.name; });

// Every cheat class whose defence is static has at least two corpus entries the rules reject,
// and every static rule that rejects is exercised by the corpus.
TEST(CorpusLint, CoversTheStaticClassesAndRules) {
  std::map<std::string, int> per_class;
  std::set<std::string> rules;
  for (const auto& e : entries())
    if (!e.lint.empty()) {
      per_class[e.cheat]++;
      rules.insert(e.lint);
    }
  for (const char* c : {"T1", "T2", "T3", "T4", "T5", "T11", "T13", "T14"})
    EXPECT_GE(per_class[c], 2) << c;
  for (const auto& r : lint_rules())
    if (std::string(r.severity) == "reject") {
      EXPECT_TRUE(rules.count(r.id)) << "no corpus entry is rejected by " << r.id;
    }
}

}  // namespace lint_corpus_test
}  // namespace kbv
