#pragma once
// Ctrl-C and SIGTERM during long work: the first one asks the work to stop after the current unit (so
// only complete samples are kept); a second one ends the process at once.
namespace shardplan {

void install_interrupt_handlers();
bool interrupt_requested();

}  // namespace shardplan
