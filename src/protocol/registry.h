// Named, versioned protocols: each name says what it reproduces, each version pins the upstream
// commit its knobs were read from. docs/PROTOCOLS.md has the table, knob by knob, with the upstream
// file each value comes from. A record stores the protocol's `name` and `version`.
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "protocol/protocol.h"

namespace kbv {

// The protocols' names, spelled here only (a record's protocol.name holds one of them).
inline constexpr const char* kProtocolKbv = "kbv";
inline constexpr const char* kProtocolKernelbenchPaper = "kernelbench-paper";
inline constexpr const char* kProtocolKernelbenchMain = "kernelbench-main";
inline constexpr const char* kProtocolKernelbenchVerified = "kernelbench-verified";
inline constexpr const char* kProtocolKernelbenchAlias = "kernelbench";  // stored records before versions

struct ProtocolEntry {
  std::string name;        // what --protocol takes and a record's protocol.name holds
  std::string version;     // the knobs' version (an upstream commit where one is reproduced)
  std::string reproduces;  // one line: what a result under this protocol is comparable with
  Protocol (*make)();
};

// Every named protocol, kbv's own first.
const std::vector<ProtocolEntry>& protocol_registry();

// Old names still accepted, and what each means now. `kernelbench` (the name before versions,
// still in stored records) means kernelbench-paper.
struct ProtocolAlias {
  std::string alias, name;
};
const std::vector<ProtocolAlias>& protocol_aliases();

// The registry's name for `name` (an alias resolved); empty when neither a name nor an alias.
std::string canonical_protocol_name(const std::string& name);

// The protocol a name or alias stands for, or a message naming the known names and aliases.
std::variant<Protocol, std::string> protocol_by_name(const std::string& name);

// Every name and alias --protocol accepts, registry order, aliases last.
std::vector<std::string> protocol_names();

// The original KernelBench paper's protocol (kernelbench-paper): kept for callers of the old name.
Protocol kernelbench_protocol();

}  // namespace kbv
