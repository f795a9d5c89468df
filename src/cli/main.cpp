// shard-plan: plans how a DLRM's embedding tables are sharded over GPUs. `main` only dispatches and maps
// typed errors to exit codes (0 ok, 1 runtime failure, 2 bad usage or input, 3 infeasible).
#include <spdlog/spdlog.h>

#include <cstring>
#include <exception>
#include <string_view>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/errors.hpp"

int main(int argc, char** argv) {
  shardplan::cli::init_logging();
  try {
    if (argc >= 2) {
      for (const auto& sub : shardplan::cli::registered_commands()) {
        if (sub.name == argv[1]) return sub.run(argc - 1, argv + 1);
      }
    }
    // `shard-plan --tables t.json --gpus 8` plans without naming the subcommand.
    return shardplan::cli::run_plan(argc, argv);
  } catch (const shardplan::Error& e) {
    // An error about a setting names it in the library's terms; the user set it with a flag.
    if (e.setting().empty()) {
      spdlog::error("{}", e.what());
    } else {
      spdlog::error("{}: {}", shardplan::cli::flag_of_setting(e.setting()), e.rule());
    }
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    spdlog::error("out of memory");
    return static_cast<int>(shardplan::ExitCode::kRuntimeFailure);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return static_cast<int>(shardplan::ExitCode::kRuntimeFailure);
  }
}
