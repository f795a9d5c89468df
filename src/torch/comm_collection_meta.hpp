#pragma once
// The provenance of an all-to-all collection: the metadata rank 0 writes with the samples (cost-data
// format), whose "config" must match for a directory to be resumed.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/torch/comm_benchmark.hpp"

namespace shardplan::collector {

// `backend` is "gloo" or "nccl"; `hosts` every rank's host name, in rank order.
nlohmann::json comm_collection_meta(const CommCollectConfig& config, const std::string& backend,
                                    const std::vector<std::string>& hosts);

}  // namespace shardplan::collector
