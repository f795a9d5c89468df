// shard-plan collect-costs compute|comm: measure real costs for pre-training the cost models.
#include <fmt/format.h>

#include <cstring>

#include "cli_common.hpp"
#include "collect_commands.hpp"
#include "commands.hpp"
#include "shardplan/core/errors.hpp"

namespace shardplan::cli {

namespace {

constexpr const char* kUsage = R"(Usage: shard-plan collect-costs MODE [OPTIONS]

Measures the costs the neural cost models are pre-trained on, on this machine's device.

Modes (each has --help):
  compute   time one training step of random shard sets (pool tables at widths 4..128)
  comm      time the forward and backward all-to-all over W ranks (c10d: Gloo on CPU, NCCL on CUDA)

Examples:
  shard-plan collect-costs compute --tables data/pool.json --samples 200 --out costs/compute
  shard-plan collect-costs comm --world-size 2 --spawn --samples 100 --out costs/comm/w2
)";

int run_collect_costs(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "compute") == 0) return run_collect_compute(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "comm") == 0) return run_collect_comm(argc - 1, argv + 1);
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    fmt::print("{}", kUsage);
    return 0;
  }
  fmt::print(stderr, "shard-plan: error: collect-costs needs a mode, compute or comm{}\n\n{}",
             argc >= 2 ? fmt::format(" (got '{}')", argv[1]) : "", kUsage);
  return static_cast<int>(ExitCode::kBadInput);
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(collect_costs, "collect-costs", "measure compute or all-to-all costs on this device",
                           run_collect_costs);

}  // namespace shardplan::cli
