// Worker zygotes (DESIGN.md "Worker zygote"): a worker started by a fork of a Python that has
// already imported torch and kbv_worker (worker/zygote.h), instead of exec and the import (1.3 CPU
// s on the 2-core CI machine, 3-4 times per evaluation). The fork is set up with the same code as
// an exec'd worker (util/child_setup.h: descriptors, sandbox, folder) and is this process's own
// child, so everything that follows (the sandbox check, waiting, killing, pinning) is unchanged.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "util/subprocess.h"

namespace kbv {

// The Python that starts every worker, exec'd or zygote: the module's folder first on the path, torch
// and kbv_worker imported. The caller has refused a folder with a quote in it.
std::string import_worker(const std::filesystem::path& worker_dir);

// Environment variables read only after a worker starts serving (never at the interpreter's or
// torch's start): a zygote serves workers that differ in them. Any other difference in the
// environment (the thread variables that OpenMP reads when it is loaded, glibc's tunables) takes
// a zygote of its own, as does another count of CPUs.
bool read_after_start(const std::string& name);

// Starts the worker of `options` (its argv runs `kbv_worker.serve(role)` after importing torch) by
// the zygote of `python` and `worker_dir` for its environment and `counted_cpus`, started the first
// time; when no zygote can serve, by spawn() itself. The zygote runs on `counted_cpus` CPUs (0:
// kbv's own), which OpenMP counts as torch loads; each fork then runs where an exec'd worker would:
// on options.cpus, else on the CPUs of the calling thread.
std::optional<Child> spawn_worker(const SpawnOptions& options, int counted_cpus, const std::string& python,
                                  const std::filesystem::path& worker_dir, const std::string& role,
                                  std::string& error);

}  // namespace kbv
