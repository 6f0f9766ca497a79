#include "protocol/protocol.h"

#include <sys/random.h>

#include "util/hash.h"

namespace kbv {

msg::WireTolerance Protocol::wire_tolerance() const { return msg::WireTolerance{atol, rtol, rel_l2, use_rel_l2}; }

nlohmann::json Protocol::to_json() const {
  nlohmann::json dists = nlohmann::json::array();
  for (const auto& d : distributions) {
    nlohmann::json e = {{"name", d.name}, {"scale", d.scale}};
    if (!d.replace.empty()) e["replace"] = {{"arg", d.replace_arg}, {"with", d.replace}};
    dists.push_back(e);
  }
  nlohmann::json j = {{"name", name},
                      {"version", version},
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
                      {"runtime_audit", runtime_audit ? "kbv-audit-1" : "none"},  // docs/POLICY.md
                      {"hidden_configs", hidden_configs},
                      {"hidden_reference_failure_passes", hidden_reference_failure_passes},
                      {"cast_integer_inputs", cast_integer_inputs},
                      {"extra_checks", extra_checks}};
  if (trial_seeds == "kernelbench")
    j["seed_policy"] = "kernelbench (trial seeds drawn from seed 42)";
  else
    j["seed_policy"] = seed ? "fixed" : "secret";
  if (seed) j["seed"] = *seed;
  if (cast_init_inputs) j["cast_init_inputs"] = true;
  return j;
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
