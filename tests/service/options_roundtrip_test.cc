// The evaluation options' one table (supervisor/option_table.h): every flag of `kbv eval` that a
// job can carry is a `kbv serve` option, and the same options reach the same EvalOptions by each of
// the three roads: kbv eval's flags; kbv serve's JSON (checked, applied by serve's own workers);
// serve's JSON -> a queued job -> `kbv worker`'s flag parser (kbv eval's own).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/worker_command.h"
#include "queue/queue.h"
#include "service/options.h"
#include "supervisor/option_table.h"

namespace kbv {
namespace options_roundtrip_test {
using nlohmann::json;

// Everything an option can change, as one comparable value.
json snapshot(const EvalOptions& o) {
  return {{"protocol", o.protocol.to_json()},
          {"device", o.device},
          {"timeouts", {o.timeouts.build_s, o.timeouts.load_s, o.timeouts.call_s, o.timeouts.reference_s}},
          {"fast_build", o.fast_build}};
}

// A valid value for every option of the table, away from its default, made from the option's
// kind and rules alone: an option added to the table is in this test without an edit.
json sample_value(const EvalOption& opt) {
  switch (opt.kind) {
    case OptionKind::choice: return opt.choices.back();
    case OptionKind::list: return opt.choices;
    case OptionKind::whole: return static_cast<int64_t>(opt.low) + 3;
    case OptionKind::positive: return 0.25;
    case OptionKind::range: return (opt.low + opt.high) / 4;
    case OptionKind::seed: return 12345;
  }
  return nullptr;
}

json sample_options() {
  json o = json::object();
  for (const auto& opt : eval_option_table()) o[opt.name] = sample_value(opt);
  return o;
}

// The options as flags on a command line: "--trials=4", "--baselines=tf32,fp32,compile".
std::vector<std::string> as_flags(const json& options) {
  std::string error;
  auto args = cli::job_option_args(options, error);
  EXPECT_TRUE(args) << error;
  return args ? *args : std::vector<std::string>{};
}

// kbv eval's own flags parsed from `args`.
EvalOptions kbv_eval_options(const std::vector<std::string>& args, json* canonical = nullptr) {
  CLI::App app{"kbv"};
  cli::Command eval = cli::add_eval_command(app);
  std::vector<std::string> argv = {"kbv", "eval"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<const char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(a.c_str());
  EXPECT_NO_THROW(app.parse(static_cast<int>(c_argv.size()), c_argv.data()));
  // The flags the app holds are read back the way `kbv eval` reads them (its CommonFlags).
  cli::CommonFlags flags;
  CLI::App again{"again"};
  flags.add(&again);
  EXPECT_NO_THROW(again.parse(std::vector<std::string>(args.rbegin(), args.rend())));
  if (canonical) {
    std::string error;
    *canonical = flags.canonical_options(error);
    EXPECT_EQ(error, "");
  }
  return flags.options();
}

service::OptionLimits limits() {
  service::OptionLimits l;
  l.device = "cpu";
  return l;
}

TEST(OptionTable, EveryEvalFlagThatAJobCarriesIsAServeOption) {
  CLI::App app{"kbv"};
  cli::Command eval = cli::add_eval_command(app);
  // kbv eval's flags that name local things (files, GPUs of this host, the queue) or that the
  // evaluating host decides (cli::kHostFlags: kbv worker --python, --sandbox, ...) do not travel with a job.
  std::set<std::string> not_carried = {"help", "problem", "solution", "json", "problems", "run", "level",
                                       "only", "gpus", "build-jobs", "queue"};
  not_carried.insert(std::begin(cli::kHostFlags), std::end(cli::kHostFlags));
  const std::vector<std::string>& keys = service::option_keys();
  int carried = 0;
  for (const CLI::Option* opt : eval.app->get_options()) {
    if (opt->get_lnames().empty()) continue;
    const std::string name = opt->get_lnames().front();
    if (not_carried.count(name)) continue;
    std::string key = name;
    for (char& c : key) c = c == '-' ? '_' : c;
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << "--" << name << " is not a kbv serve option";
    ++carried;
  }
  EXPECT_EQ(carried, static_cast<int>(eval_option_table().size()));
  for (const char* added : {"timing_pairs", "flaky_reruns", "cpu_threads", "fast_build"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), added), keys.end()) << added;
}

TEST(OptionTable, ServeOptionsThroughAJobReachTheSameEvalOptionsAsKbvEvalsFlags) {
  const json given = sample_options();
  service::CheckedOptions checked = service::check_options(given, limits());
  ASSERT_TRUE(checked.ok()) << checked.error;

  // kbv serve's own workers (service/pool.cc) apply the canonical options.
  EvalOptions served;
  ASSERT_EQ(service::apply_options(checked.canonical, served), "");

  // A queued job: the canonical options -> flags -> kbv worker's parser (kbv eval's CommonFlags).
  std::string error;
  cli::WorkerHost host;
  host.sandbox = "off";
  std::optional<EvalOptions> worker = cli::worker_hooks().parse_options(as_flags(checked.canonical), host, error);
  ASSERT_TRUE(worker) << error;

  // kbv eval with the same options as flags.
  json eval_canonical;
  EvalOptions eval = kbv_eval_options(as_flags(given), &eval_canonical);

  EXPECT_EQ(snapshot(*worker), snapshot(eval));
  EXPECT_EQ(snapshot(served), snapshot(eval));
  // The same canonical options, hence the same job key, whichever road submitted them.
  EXPECT_EQ(eval_canonical, checked.canonical);
  EXPECT_EQ(eval.protocol.name, "kernelbench-paper") << "the alias given, its protocol's name recorded";
  EXPECT_EQ(checked.canonical["protocol"], "kernelbench-paper") << "an alias and its name are one job key";
  EXPECT_EQ(eval.protocol.timing.pairs, 3);
  EXPECT_EQ(eval.protocol.flaky_reruns, 3);
}

TEST(OptionTable, EachOptionChangesWhatItNamesAndArrivesAlikeByEveryRoad) {
  const EvalOptions defaults = kbv_eval_options({});
  for (const auto& opt : eval_option_table()) {
    json one = {{opt.name, sample_value(opt)}};
    if (opt.name == "timing_sets") one["timing_inputs"] = "sets";
    SCOPED_TRACE(opt.name);
    service::CheckedOptions checked = service::check_options(one, limits());
    ASSERT_TRUE(checked.ok()) << checked.error;
    EvalOptions served;
    ASSERT_EQ(service::apply_options(checked.canonical, served), "");
    std::string error;
    cli::WorkerHost host;
    host.sandbox = "off";
    std::optional<EvalOptions> worker = cli::worker_hooks().parse_options(as_flags(checked.canonical), host, error);
    ASSERT_TRUE(worker) << error;
    EvalOptions eval = kbv_eval_options(as_flags(one));
    EXPECT_NE(snapshot(eval), snapshot(defaults)) << "the option changed nothing";
    // serve's canonical options, applied by serve's own workers or through a job and kbv worker.
    EXPECT_EQ(snapshot(*worker), snapshot(served));
    // serve fills the device with its own ("cpu" here); kbv eval leaves it to the probe.
    json s = snapshot(served), e = snapshot(eval);
    if (opt.name != "device") s["device"] = e["device"];
    EXPECT_EQ(s, e);
  }
}

// `kbv eval --problem P --solution S --queue URL` submits the canonical options (as kbv serve and
// kbv eval --run --queue do), never the flags' raw text: the same evaluation is one job key by
// every road, so a record already in the queue answers it.
TEST(OptionTable, EvalOfOnePairThroughAQueueSubmitsTheCanonicalOptions) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kbv-options-queue-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "level1");
  const fs::path problem = dir / "level1" / "19_ReLU.py", solution = dir / "answer.py";
  std::ofstream(problem) << "import torch\n";
  std::ofstream(solution) << "import torch\n";
  const std::string url = "sqlite:" + (dir / "queue.db").string();
  // Flags spelt otherwise than their canonical form: an alias, a list out of order, a number as text.
  const std::vector<std::string> flags = {"--protocol=kernelbench", "--baselines=fp32,tf32", "--trials=04",
                                          "--timing=off"};
  CLI::App app{"kbv"};
  cli::Command eval = cli::add_eval_command(app);
  std::vector<std::string> argv = {"kbv", "eval", "--problem", problem.string(), "--solution", solution.string(),
                                   "--queue", url};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::vector<const char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(a.c_str());
  ASSERT_NO_THROW(app.parse(static_cast<int>(c_argv.size()), c_argv.data()));
  int code = -1;
  std::thread submitter([&] { code = eval.run(); });

  // The job as a worker leases it.
  std::string error;
  std::unique_ptr<queue::Queue> q;
  std::optional<queue::Lease> lease;
  for (int i = 0; i < 600 && !lease; ++i) {
    if (!q) q = queue::Queue::open(url, error);
    if (q) lease = q->lease("test", 60, error);
    if (!lease) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(lease) << error;
  std::optional<queue::Job> job = q->job_of(*lease, error);
  ASSERT_TRUE(job) << error;
  ASSERT_TRUE(q->fail(*lease, "the test stops here", false, error)) << error;  // the submitter returns
  submitter.join();
  EXPECT_EQ(code, 1) << "a failed job is an incomplete kbv eval";

  // kbv serve's canonical options for the same options, and kbv eval's own.
  const json given = {{"protocol", "kernelbench"}, {"baselines", json::array({"fp32", "tf32"})}, {"trials", 4}, {"timing", "off"}};
  service::OptionLimits l;  // serve leaves the device to its workers unless asked: so does kbv eval
  service::CheckedOptions checked = service::check_options(given, l);
  ASSERT_TRUE(checked.ok()) << checked.error;
  json eval_canonical;
  kbv_eval_options(flags, &eval_canonical);
  EXPECT_EQ(job->spec.options, eval_canonical);
  EXPECT_EQ(job->spec.options, checked.canonical);
  queue::JobSpec served = job->spec;
  served.options = checked.canonical;
  EXPECT_EQ(job->spec.key(), served.key());
  EXPECT_EQ(job->spec.options["protocol"], "kernelbench-paper");
  EXPECT_EQ(job->spec.options["trials"], 4);
  fs::remove_all(dir);
}

TEST(OptionTable, FlagsAndServeOptionsRefuseTheSameValuesWithTheSameWords) {
  struct Case {
    std::string key;
    json value;
  };
  for (const Case& c : {Case{"trials", 0}, Case{"flaky_reruns", 101}, Case{"timing_pairs", -1},
                        Case{"launch_hold_us", 1e9}, Case{"baselines", "tf32,int8"}, Case{"protocol", "upstream"},
                        Case{"seed", -3}, Case{"timing_sets", 2000}}) {
    SCOPED_TRACE(c.key);
    const std::string serve_error = service::check_options({{c.key, c.value}}, limits()).error;
    ASSERT_NE(serve_error, "");
    const EvalOption* opt = find_eval_option(c.key);
    ASSERT_NE(opt, nullptr);
    json canonical;
    const std::string text = c.value.is_string() ? c.value.get<std::string>() : c.value.dump();
    EXPECT_EQ("options." + c.key + ": " + parse_option_text(*opt, text, canonical), serve_error);
    CLI::App app{"kbv"};
    cli::Command eval = cli::add_eval_command(app);
    const std::string arg = opt->flag() + "=" + text;
    std::vector<const char*> argv = {"kbv", "eval", arg.c_str()};
    EXPECT_THROW(app.parse(static_cast<int>(argv.size()), argv.data()), CLI::ValidationError);
  }
  // The rule between two options holds for the flags too.
  cli::CommonFlags flags;
  CLI::App app{"flags"};
  flags.add(&app);
  EXPECT_THROW(app.parse(std::vector<std::string>{"--timing-sets=3", "--timing-inputs=fresh"}), CLI::ValidationError);
}

}  // namespace options_roundtrip_test
}  // namespace kbv
