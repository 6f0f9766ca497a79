#include "supervisor/verdict.h"

#include <gtest/gtest.h>
#include <set>

namespace kbv {
namespace verdict_test {

TEST(SeedSource, FixedMasterIsReproducibleAndSpread) {
  SeedSource a(7), b(7), c(8);
  std::set<uint64_t> seen;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(SeedSource, SecretSeedsDiffer) {
  SeedSource a(std::nullopt), b(std::nullopt);
  EXPECT_NE(a.next(), b.next());
}

TEST(Protocol, DefaultsAreKernelBenchVerified) {
  Protocol p;
  EXPECT_EQ(p.trials, 5);
  ASSERT_EQ(p.distributions.size(), 4u);
  EXPECT_EQ(p.distributions[1].scale, 3.0);
  EXPECT_EQ(p.distributions[2].scale, 0.01);
  EXPECT_EQ(p.distributions[3].scale, -1.0);
  EXPECT_EQ(p.atol, 1e-3);
  EXPECT_TRUE(p.use_rel_l2);
  EXPECT_EQ(p.to_json()["seed_policy"], "secret");
  Protocol k = kernelbench_protocol();
  EXPECT_EQ(k.distributions.size(), 1u);
  EXPECT_EQ(k.atol, 1e-2);
  EXPECT_FALSE(k.use_rel_l2);
  EXPECT_TRUE(k.to_json()["rel_l2"].is_null());
  // Identical re-runs of a failed check (flaky vs wrong_output): kbv's, recorded; none upstream.
  EXPECT_EQ(p.flaky_reruns, 2);
  EXPECT_EQ(p.to_json()["flaky_reruns"], 2);
  EXPECT_EQ(k.flaky_reruns, 0);
  EXPECT_EQ(k.to_json()["flaky_reruns"], 0);
}

TEST(Protocol, HashCoversKnobsAndEnvironment) {
  nlohmann::json env = {{"torch_version", "2.11.0"}, {"device_name", "cpu"}};
  Protocol p;
  std::string h = protocol_hash(p, env);
  EXPECT_EQ(h, protocol_hash(Protocol{}, env));
  Protocol q;
  q.atol = 2e-3;
  EXPECT_NE(h, protocol_hash(q, env));
  Protocol s;
  s.seed = 1;
  EXPECT_NE(h, protocol_hash(s, env));
  nlohmann::json other = env;
  other["device_name"] = "NVIDIA H200";
  EXPECT_NE(h, protocol_hash(p, other));
  EXPECT_NE(h, protocol_hash(kernelbench_protocol(), env));
  Protocol lenient;
  lenient.policy = Policy::lenient;
  EXPECT_NE(h, protocol_hash(lenient, env)) << "a lenient run is not resumed as a strict one";
  Protocol no_reruns;
  no_reruns.flaky_reruns = 0;
  EXPECT_NE(h, protocol_hash(no_reruns, env)) << "re-runs decide flaky vs wrong_output";
  EXPECT_EQ(lenient.to_json()["policy"], "lenient");
  EXPECT_EQ(p.to_json()["policy"], "strict");
}

TEST(StickyCudaError, RecognisesContextKillers) {
  EXPECT_TRUE(is_sticky_cuda_error("RuntimeError: CUDA error: an illegal memory access was encountered"));
  EXPECT_TRUE(is_sticky_cuda_error("CUDA error after the call: unspecified launch failure"));
  EXPECT_TRUE(is_sticky_cuda_error("CUDA error: device-side assert triggered"));
  EXPECT_FALSE(is_sticky_cuda_error("CUDA out of memory. Tried to allocate 6.00 GiB"));
  EXPECT_FALSE(is_sticky_cuda_error("ValueError: shapes do not match"));
}

}  // namespace verdict_test
}  // namespace kbv
