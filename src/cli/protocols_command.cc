// `kbv protocols`: the named, versioned protocols --protocol takes (src/protocol/registry.h).
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "protocol/registry.h"

namespace kbv::cli {

Command add_protocols_command(CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  auto* protocols = app.add_subcommand(
      "protocols", "list the protocols --protocol takes: name, version, what each reproduces (docs/PROTOCOLS.md)");
  protocols->add_flag("--json", *as_json, "every protocol with all its knobs, as records store them, on stdout");
  return {protocols, [as_json]() {
            if (*as_json) {
              nlohmann::json out = {{"protocols", nlohmann::json::array()}, {"aliases", nlohmann::json::object()}};
              for (const auto& e : kbv::protocol_registry())
                out["protocols"].push_back({{"name", e.name},
                                            {"version", e.version},
                                            {"reproduces", e.reproduces},
                                            {"knobs", e.make().to_json()}});
              for (const auto& a : kbv::protocol_aliases()) out["aliases"][a.alias] = a.name;
              std::cout << out.dump(2) << "\n";
              return 0;
            }
            for (const auto& e : kbv::protocol_registry())
              std::cout << fmt::format("{:<22} {:<9} {}\n", e.name, e.version, e.reproduces);
            for (const auto& a : kbv::protocol_aliases())
              std::cout << fmt::format("{:<22} {:<9} an alias of {}\n", a.alias, "", a.name);
            return 0;
          }};
}

}  // namespace kbv::cli
