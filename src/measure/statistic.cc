#include "measure/statistic.h"

#include <fmt/format.h>

namespace kbv {

namespace {

// The protocol's statistic by its name: "mean", or "median" for anything else (kbv's default).
const char* statistic_name(const TimingProtocol& t) {
  return t.statistic == kStatisticMean ? kStatisticMean : kStatisticMedian;
}

}  // namespace

double statistic_ms(const Stats& s, const std::string& statistic) {
  return statistic == kStatisticMean ? s.mean_ms : s.median_ms;
}

const char* statistic_key(const std::string& statistic) {
  return statistic == kStatisticMean ? "mean_ms" : "median_ms";
}

std::string loop_description(const TimingProtocol& t) {
  const std::string calls = t.rule.calls > 0 ? fmt::format("{} calls", t.rule.calls)
                                             : std::string("the calls kbv's stopping rule took");
  const std::string inputs = t.fresh ? "a fresh draw each call" : t.sets == 1 ? "the same inputs each call"
                                                                             : fmt::format("{} input sets", t.sets);
  const std::string flush = t.l2_flush ? "a cache flush before each call" : "no cache flush";
  const std::string loop =
      t.loop == kLoopUpstream
          ? "upstream's loop: cuda-event times on the GPU, the inputs not reloaded between calls"
          : "kbv's loop: on the GPU the host clock where it disagrees with the events";
  return fmt::format("{} of {} after {} warm-ups, {}, {} ({})", statistic_name(t), calls, t.rule.warmup, inputs, flush, loop);
}

nlohmann::json runtime_stats_json(const Stats& s, const TimingProtocol& t, const std::string& hardware,
                                  const std::string& device) {
  return {{"mean", s.mean_ms},
          {"std", s.std_ms},
          {"min", s.min_ms},
          {"max", s.max_ms},
          {"median", s.median_ms},
          {"num_trials", s.samples},
          {"hardware", hardware},
          {"device", device},
          {"statistic", statistic_name(t)},
          {"loop", loop_description(t)}};
}

std::string runtime_statistic(const nlohmann::json& runtime_stats) {
  if (runtime_stats.is_object() && runtime_stats.contains("statistic") && runtime_stats["statistic"] == kStatisticMean)
    return kStatisticMean;
  return kStatisticMedian;
}

}  // namespace kbv
