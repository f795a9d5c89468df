#pragma once
// Subcommands register themselves (one file each under src/cli/), so adding one touches no other file.
// argv[0] of a command's run function is the subcommand's name.
#include <string_view>
#include <vector>

namespace shardplan::cli {

using CommandFn = int (*)(int argc, char** argv);

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `shard-plan --help`
  CommandFn run;
};

// Every registered subcommand, sorted by name.
std::vector<Command> registered_commands();

struct CommandRegistrar {
  CommandRegistrar(std::string_view name, std::string_view summary, CommandFn run);
};

// The planner itself: `shard-plan [plan] --tables T --gpus N`.
int run_plan(int argc, char** argv);

}  // namespace shardplan::cli

#define SHARDPLAN_REGISTER_COMMAND(ident, name, summary, fn) \
  static const ::shardplan::cli::CommandRegistrar shardplan_command_##ident { name, summary, fn }
