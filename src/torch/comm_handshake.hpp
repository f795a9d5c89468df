#pragma once
// How the collector's ranks agree before and between samples: the settings every rank must share, where
// to start (rank 0 opens the output), when to stop, and every rank's host.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "c10d_job.hpp"
#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan::collector {

// Rank 0 opens the output (writer) with the collection's metadata and tells every rank where to start;
// every rank checks it was given the same settings. Returns the first sample index, or throws on every
// rank when any rank cannot go on (InputError for bad settings or output, RuntimeFailure otherwise).
int64_t agree_on_start(const Job& job, const CommCollectConfig& config, std::optional<CostDataWriter>& writer,
                       const std::string& backend, const std::vector<std::string>& hosts);

// Any rank asked to stop (Ctrl-C or SIGTERM reaches every rank under torchrun, only the parent under
// --spawn, which forwards it): all stop before the same sample. Doubles as the barrier before a sample.
bool agree_to_stop(const Job& job);

// Every rank's host name at rank 0, in rank order (empty at the other ranks).
std::vector<std::string> exchange_host_names(const Job& job);

}  // namespace shardplan::collector
