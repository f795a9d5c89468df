#include "commands.hpp"

#include <algorithm>

namespace shardplan::cli {

namespace {

std::vector<Command>& registry() {
  static std::vector<Command> commands;  // constructed on first use, before any registrar needs it
  return commands;
}

}  // namespace

CommandRegistrar::CommandRegistrar(std::string_view name, std::string_view summary, CommandFn run) {
  registry().push_back(Command{name, summary, run});
}

std::vector<Command> registered_commands() {
  std::vector<Command> commands = registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  return commands;
}

}  // namespace shardplan::cli
