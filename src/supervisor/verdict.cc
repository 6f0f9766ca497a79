#include "supervisor/verdict.h"

#include <sys/random.h>

#include "util/hash.h"

namespace kbv {

msg::WireTolerance Protocol::wire_tolerance() const { return msg::WireTolerance{atol, rtol, rel_l2, use_rel_l2}; }

nlohmann::json Protocol::to_json() const {
  nlohmann::json dists = nlohmann::json::array();
  for (const auto& d : distributions) dists.push_back({{"name", d.name}, {"scale", d.scale}});
  nlohmann::json j = {{"name", name},
                      {"trials", trials},
                      {"distributions", dists},
                      {"atol", atol},
                      {"rtol", rtol},
                      {"rel_l2", use_rel_l2 ? nlohmann::json(rel_l2) : nlohmann::json(nullptr)},
                      {"reference_precision", reference_precision},
                      {"precision", precision},
                      {"construction_seed", construction_seed},
                      {"input_draw", input_draw},
                      {"policy", policy_name(policy)},
                      {"timing", timing.to_json()},
                      {"flaky_reruns", flaky_reruns},
                      {"runtime_audit", "kbv-audit-1"}};  // docs/POLICY.md, "Runtime audits"
  if (name == "kernelbench")
    j["seed_policy"] = "kernelbench (trial seeds drawn from seed 42)";
  else
    j["seed_policy"] = seed ? "fixed" : "secret";
  if (seed) j["seed"] = *seed;
  return j;
}

Protocol kernelbench_protocol() {
  Protocol p;
  p.name = "kernelbench";
  p.trials = 5;
  p.distributions = {{"D1", 1.0}};
  p.atol = p.rtol = 1e-2;
  p.use_rel_l2 = false;
  p.input_draw = "host";
  p.timing.pairs = 0;  // upstream times the candidate once and the baseline apart
  p.flaky_reruns = 0;  // upstream has no re-runs
  return p;
}

std::string protocol_hash(const Protocol& protocol, const nlohmann::json& environment) {
  nlohmann::json j = protocol.to_json();
  // A secret-seed run is comparable with any other secret-seed run of the same protocol.
  return sha256_hex_parts({j.dump(), environment.dump()});
}

uint64_t SeedSource::next() {
  if (master_) {
    // splitmix64 over (master, counter): reproducible, well spread.
    uint64_t z = *master_ + 0x9e3779b97f4a7c15ULL * ++counter_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t v = 0;
  while (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
  }
  return v;
}

}  // namespace kbv
