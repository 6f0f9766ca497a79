// Ctrl-C: the supervisor stops taking work, abandons the pair in flight (its record is not
// stored, so the store stays consistent) and says where things stand.
#pragma once

namespace kbv {

// Installs SIGINT/SIGTERM handlers (without SA_RESTART) that set the flag below.
void install_interrupt_handler();
bool interrupted();

}  // namespace kbv
