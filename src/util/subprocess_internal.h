// Internals shared by the files behind util/subprocess.h (spawn.cc, process_groups.cc,
// run_command.cc): the registry of spawn()'s children, the /proc process table, and the spawn
// that sends a child's output to a given fd. Not for use outside src/util/.
#pragma once
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "util/subprocess.h"

namespace kbv::subprocess_internal {

std::string errno_text(int err);

// Children started by spawn() and not yet reaped. Every other child of this process is a stray:
// a process that left a worker's group and was adopted here (kill_strays).
extern std::mutex g_children_mutex;
extern std::unordered_set<int> g_children;
void forget_child(int pid);

// One line of /proc/<pid>/stat: "pid (comm) state ppid pgrp ...".
struct ProcEntry {
  int pid = 0, ppid = 0, pgrp = 0;
  char state = '?';
};
std::vector<ProcEntry> proc_table();

// Spawn with stdout+stderr going to `out_fd` (not closed here); out_fd < 0: the options' log.
std::optional<Child> spawn_with_output(const SpawnOptions& options, int out_fd, std::string& error);

}  // namespace kbv::subprocess_internal
