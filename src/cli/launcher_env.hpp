#pragma once
// Where this process sits in a launched job, from the variables torchrun (or a cluster scheduler) sets:
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE.
#include "shardplan/torch/comm_benchmark.hpp"

namespace shardplan::cli {

// Whether a launcher started this process as one rank of a job (WORLD_SIZE is set).
bool launched_as_rank();

// What a command offers instead of a launcher, for the error that a variable is missing.
inline constexpr const char* kSpawnInstead = "use --spawn to run every rank here";

// This rank's place; `flag_world_size`, when not 0, must agree with WORLD_SIZE, which must be at least
// `min_world_size`. InputError names a missing or malformed variable, and says what to do instead.
CommRendezvous rendezvous_from_environment(int flag_world_size, int min_world_size = 2,
                                           const char* instead = kSpawnInstead);

// The ranks on this rank's host: LOCAL_WORLD_SIZE, else every rank (one host).
int local_world_size_from_environment(int world_size);

}  // namespace shardplan::cli
