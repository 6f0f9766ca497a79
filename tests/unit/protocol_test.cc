// The protocol room: the registry of named, versioned protocols, its alias, the hash, the
// knobs each upstream protocol sets, and KernelBench-Verified's per-problem hidden configs.
#include "protocol/hidden.h"
#include "protocol/protocol.h"
#include "protocol/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "proto/messages.h"
#include "supervisor/precision.h"

namespace kbv {
namespace protocol_test {

Protocol named(const std::string& name) {
  auto p = protocol_by_name(name);
  if (auto* error = std::get_if<std::string>(&p)) ADD_FAILURE() << *error;
  return std::get_if<Protocol>(&p) ? std::get<Protocol>(p) : Protocol{};
}

TEST(ProtocolRegistry, NamesAreUniqueVersionedAndMakeTheirOwnName) {
  std::set<std::string> names;
  for (const ProtocolEntry& e : protocol_registry()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_FALSE(e.version.empty()) << e.name;
    EXPECT_FALSE(e.reproduces.empty()) << e.name;
    Protocol p = e.make();
    EXPECT_EQ(p.name, e.name);
    EXPECT_EQ(p.version, e.version);
    EXPECT_EQ(p.to_json()["name"], e.name);
    EXPECT_EQ(p.to_json()["version"], e.version);
  }
  EXPECT_EQ(names, (std::set<std::string>{"kbv", "kernelbench-paper", "kernelbench-main", "kernelbench-verified"}));
  EXPECT_EQ(protocol_registry().front().name, "kbv");
}

TEST(ProtocolRegistry, KbvIsTheDefaultProtocolUnchanged) {
  Protocol p = named("kbv");
  Protocol d;
  EXPECT_EQ(p.to_json(), d.to_json());
  EXPECT_EQ(p.trial_seeds, "kbv");
  EXPECT_EQ(p.hidden_configs, "none");
  EXPECT_TRUE(p.runtime_audit);
  EXPECT_EQ(p.extra_checks, "reject");
  EXPECT_FALSE(p.cast_integer_inputs);
  EXPECT_EQ(p.reference_precision, "fp32-strict");
}

TEST(ProtocolRegistry, KernelbenchIsAnAliasOfThePaperProtocol) {
  EXPECT_EQ(canonical_protocol_name("kernelbench"), "kernelbench-paper");
  EXPECT_EQ(canonical_protocol_name("kernelbench-paper"), "kernelbench-paper");
  EXPECT_EQ(canonical_protocol_name("verified"), "");
  Protocol alias = named("kernelbench");
  EXPECT_EQ(alias.name, "kernelbench-paper") << "a record stores the registry's name, not the alias";
  EXPECT_EQ(alias.to_json(), named("kernelbench-paper").to_json());
  EXPECT_EQ(kernelbench_protocol().to_json(), alias.to_json());
  std::vector<std::string> all = protocol_names();
  EXPECT_NE(std::find(all.begin(), all.end(), "kernelbench"), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), "kernelbench-verified"), all.end());
}

TEST(ProtocolRegistry, UnknownNameListsTheKnownOnes) {
  auto p = protocol_by_name("kernelbench-v2");
  ASSERT_TRUE(std::holds_alternative<std::string>(p));
  const std::string& m = std::get<std::string>(p);
  EXPECT_EQ(m,
            "unknown protocol 'kernelbench-v2': expected one of kbv, kernelbench-paper, kernelbench-main, "
            "kernelbench-verified, kernelbench (= kernelbench-paper) (docs/PROTOCOLS.md)");
  EXPECT_TRUE(std::holds_alternative<std::string>(protocol_by_name("")));
}

TEST(ProtocolRegistry, EachProtocolHashesApart) {
  nlohmann::json env = {{"torch_version", "2.11.0"}, {"device_name", "cpu"}};
  std::set<std::string> hashes;
  for (const ProtocolEntry& e : protocol_registry()) hashes.insert(protocol_hash(e.make(), env));
  EXPECT_EQ(hashes.size(), protocol_registry().size());
  Protocol a = named("kernelbench-verified"), b = a;
  b.version = "later";
  EXPECT_NE(protocol_hash(a, env), protocol_hash(b, env)) << "a new version of a protocol is a new protocol";
  b = a;
  b.hidden_reference_failure_passes = false;
  EXPECT_NE(protocol_hash(a, env), protocol_hash(b, env));
  b = a;
  b.cast_integer_inputs = false;
  EXPECT_NE(protocol_hash(a, env), protocol_hash(b, env));
}

TEST(ProtocolRegistry, UpstreamToleranceAndDraws) {
  Protocol paper = named("kernelbench-paper"), kb_main = named("kernelbench-main");
  Protocol verified = named("kernelbench-verified");
  EXPECT_EQ(paper.atol, 1e-2);
  EXPECT_EQ(kb_main.atol, 1e-4);
  EXPECT_EQ(verified.atol, 1e-3);
  for (const Protocol* p : {&paper, &kb_main, &verified}) {
    EXPECT_EQ(p->rtol, p->atol) << p->name;
    EXPECT_FALSE(p->use_rel_l2) << p->name << ": upstream has allclose only";
    EXPECT_EQ(p->trials, 5) << p->name;
    ASSERT_EQ(p->distributions.size(), 1u) << p->name;
    EXPECT_EQ(p->distributions[0].name, "D1");
    EXPECT_EQ(p->trial_seeds, "kernelbench") << p->name;
    EXPECT_EQ(p->to_json()["seed_policy"], "kernelbench (trial seeds drawn from seed 42)");
    EXPECT_EQ(p->input_draw, "host") << p->name;
    EXPECT_FALSE(p->runtime_audit) << p->name;
    EXPECT_EQ(p->to_json()["runtime_audit"], "none");
    EXPECT_EQ(p->extra_checks, "warn") << p->name;
    EXPECT_EQ(p->flaky_reruns, 0) << p->name;
    EXPECT_EQ(p->timing.pairs, 0) << p->name;
  }
  EXPECT_FALSE(paper.cast_integer_inputs) << "the paper's harness passed inputs as drawn";
  EXPECT_TRUE(kb_main.cast_integer_inputs);
  EXPECT_TRUE(verified.cast_integer_inputs);
  EXPECT_EQ(paper.hidden_configs, "none");
  EXPECT_EQ(kb_main.hidden_configs, "none");
  EXPECT_EQ(verified.hidden_configs, "kernelbench-verified");
  EXPECT_TRUE(verified.hidden_reference_failure_passes);
  for (const Protocol* p : {&paper, &kb_main, &verified})
    EXPECT_EQ(p->reference_precision, "torch-default") << p->name << ": upstream sets no TF32 flag";
  EXPECT_FALSE(verified.timing.fresh) << "upstream times every call on the same inputs";
  EXPECT_EQ(verified.timing.sets, 1);
}

TEST(ProtocolRegistry, PrecisionKeepsEachProtocolsFp32Tolerance) {
  Protocol kb_main = named("kernelbench-main");
  set_precision(kb_main, "fp32");
  EXPECT_EQ(kb_main.atol, 1e-4) << "KernelBench main's fp32 tolerance";
  set_precision(kb_main, "bf16");
  EXPECT_EQ(kb_main.atol, 1e-2) << "KernelBench main's bf16 tolerance";
  Protocol verified = named("kernelbench-verified");
  set_precision(verified, "fp16");
  EXPECT_EQ(verified.atol, 1e-2);
  Protocol kbv;
  set_precision(kbv, "fp32");
  EXPECT_EQ(kbv.atol, 1e-3);
  EXPECT_EQ(kbv.rel_l2, 1e-3);
}

TEST(VerifiedHiddenConfigs, StandardFourAndTheThreeExceptions) {
  auto names = [](const std::vector<Distribution>& ds) {
    std::vector<std::string> out;
    for (const auto& d : ds) out.push_back(d.name);
    return out;
  };
  using V = std::vector<std::string>;
  std::vector<Distribution> standard = verified_hidden_configs(2, "17_Conv2d_InstanceNorm_Divide.py");
  EXPECT_EQ(names(standard), (V{"D1", "D2", "D3", "D4"}));
  EXPECT_EQ(standard[1].scale, 3.0);
  EXPECT_EQ(standard[2].scale, 0.01);
  EXPECT_EQ(standard[3].scale, -1.0);
  EXPECT_EQ(names(verified_hidden_configs(1, "90_cumprod.py")), (V{"D1", "D3", "D4"}));
  EXPECT_EQ(names(verified_hidden_configs(1, "98_KLDivLoss.py")), (V{"D1", "D2", "D3"}));
  std::vector<Distribution> hinge = verified_hidden_configs(1, "100_HingeLoss.py");
  ASSERT_EQ(names(hinge), (V{"D1", "D2", "D3", "D4", "D5"}));
  EXPECT_EQ(hinge[4].replace, "alternating-pm1");
  EXPECT_EQ(hinge[4].replace_arg, 1);
  EXPECT_EQ(hinge[4].scale, 1.0);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(hinge[i].replace.empty());
  // Another suite's problem with the same id is not upstream's: the standard four.
  EXPECT_EQ(names(verified_hidden_configs(1, "90_Other.py")), (V{"D1", "D2", "D3", "D4"}));
  EXPECT_EQ(names(verified_hidden_configs(2, "90_cumprod.py")), (V{"D1", "D2", "D3", "D4"}));
}

TEST(VerifiedHiddenConfigs, InputsRequestCarriesTheStreamPositionAndReplacement) {
  msg::InputsRequest r;
  r.seed = 12;
  r.draws_before = 4;
  r.replace = "alternating-pm1";
  r.replace_arg = 1;
  r.cast_integer_inputs = true;
  nlohmann::json j = msg::to_json(r);
  EXPECT_EQ(j["draws_before"], 4);
  EXPECT_EQ(j["replace"], "alternating-pm1");
  EXPECT_EQ(j["cast_integer_inputs"], true);
  msg::InputsRequest back;
  ASSERT_EQ(msg::from_json(j, back), "");
  EXPECT_EQ(back.draws_before, 4);
  EXPECT_EQ(back.replace, "alternating-pm1");
  EXPECT_EQ(back.replace_arg, 1);
  EXPECT_TRUE(back.cast_integer_inputs);
  msg::InputsRequest old;  // a request without the fields: the draw as before
  ASSERT_EQ(msg::from_json(nlohmann::json{{"op", "inputs"}, {"seed", 3}}, old), "");
  EXPECT_EQ(old.draws_before, 0);
  EXPECT_TRUE(old.replace.empty());
  EXPECT_FALSE(old.cast_integer_inputs);
}

}  // namespace protocol_test
}  // namespace kbv
