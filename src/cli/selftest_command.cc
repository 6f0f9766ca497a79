// `kbv selftest`: the example corpus, expected verdicts against kbv's.
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/output.h"
#include "supervisor/selftest.h"
#include "util/fs.h"

namespace kbv::cli {

Command add_selftest_command(CLI::App& app) {
  struct State {
    CommonFlags flags;
    std::string manifest = "examples/manifest.json", json;
    bool static_only = false;
    int jobs = default_build_jobs();
  };
  auto s = std::make_shared<State>();
  auto* selftest = app.add_subcommand("selftest", "evaluate the example corpus and print expected vs got");
  selftest->add_option("--manifest", s->manifest, "the corpus manifest")->capture_default_str();
  selftest->add_option("--json", s->json, "write the JSON summary here ('-': stdout)");
  selftest->add_flag("--static", s->static_only,
                     "only the static analysis (kbv lint) over every entry, CUDA ones included: no worker, no GPU");
  selftest->add_option("--build-jobs", s->jobs, "candidates compiled at once")->capture_default_str();
  s->flags.add(selftest);
  return {selftest, [s]() {
            kbv::SelftestOptions so;
            so.manifest = s->manifest;
            so.device = s->flags.value("device");
            so.eval = s->flags.options();
            std::string given_error;  // checked when the flags were parsed
            if (nlohmann::json given = s->flags.canonical_options(given_error); given.is_object()) so.given = given;
            so.build_jobs = s->jobs;
            so.static_only = s->static_only;
            if (!so.static_only && !sandbox_preflight(so.eval)) return 2;
            kbv::SelftestResult r = kbv::run_selftest(so, printer("kbv selftest"));
            if (r.outcome.status == Status::input_error) return finish("kbv selftest", r.outcome);
            if (s->json == "-") std::cout << r.summary.dump(2) << "\n";
            else if (!s->json.empty()) kbv::write_file_atomic(s->json, r.summary.dump(2) + "\n");
            return finish("kbv selftest", r.outcome);
          }};
}

}  // namespace kbv::cli
