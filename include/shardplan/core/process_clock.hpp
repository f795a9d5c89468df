#pragma once
// When this process started, on the steady clock: a time limit a user gives a command counts from there,
// loading the shared libraries (LibTorch's take about half a second) included.
#include <chrono>

namespace shardplan {

// Read from the kernel's record of the process's start (Linux); where that is unavailable, the time of
// the first call.
std::chrono::steady_clock::time_point process_start_time();

}  // namespace shardplan
