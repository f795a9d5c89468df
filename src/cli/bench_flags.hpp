#pragma once
// The compute benchmark's flags, shared by everything that times shard sets on this machine's device
// (collect-costs compute, evaluate --measure, bench --measure), so they mean the same everywhere.
#include <CLI/CLI.hpp>
#include <string>

#include "shardplan/costs/compute_benchmark.hpp"

namespace shardplan::cli {

// Flags --<prefix>batch-size, --<prefix>device, ...: collect-costs uses no prefix; commands whose other
// flags would clash (bench has the search's --threads) use "measure-".
void add_bench_options(CLI::App& app, ComputeBenchConfig& config, const std::string& prefix = "");
// Throws InputError naming the flag and value.
void check_bench_options(const ComputeBenchConfig& config, const std::string& prefix = "");

}  // namespace shardplan::cli
