#include "launcher_env.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "shardplan/core/errors.hpp"

namespace shardplan::cli {

namespace {

// An integer launcher variable: InputError names the variable when it is missing or malformed.
std::optional<int64_t> env_int(const char* name, bool required, int64_t low, int64_t high,
                               const char* instead = kSpawnInstead) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    if (!required) return std::nullopt;
    throw InputError(fmt::format(
        "environment variable {} is not set: launch one process per rank with RANK, WORLD_SIZE, MASTER_ADDR and "
        "MASTER_PORT set (as torchrun or a cluster scheduler does), or {}",
        name, instead));
  }
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) {
    throw InputError(
        fmt::format("environment variable {}: must be an integer in [{}, {}], got '{}'", name, low, high, text));
  }
  return value;
}

std::string env_string(const char* name, const char* instead) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    throw InputError(
        fmt::format("environment variable {} is not set: it names the host of rank 0, which serves the "
                    "TCP store (or {})",
                    name, instead));
  }
  return text;
}

}  // namespace

bool launched_as_rank() {
  const char* world = std::getenv("WORLD_SIZE");
  return world != nullptr && *world != '\0';
}

CommRendezvous rendezvous_from_environment(int flag_world_size, int min_world_size, const char* instead) {
  CommRendezvous where;
  where.world_size = static_cast<int>(*env_int("WORLD_SIZE", true, min_world_size, 4096, instead));
  if (flag_world_size != 0 && flag_world_size != where.world_size) {
    throw InputError(fmt::format("--world-size {} disagrees with the environment's WORLD_SIZE={}", flag_world_size,
                                 where.world_size));
  }
  where.rank = static_cast<int>(*env_int("RANK", true, 0, where.world_size - 1, instead));
  where.master_addr = env_string("MASTER_ADDR", instead);
  where.master_port = static_cast<int>(*env_int("MASTER_PORT", true, 1, 65535, instead));
  where.local_rank = static_cast<int>(env_int("LOCAL_RANK", false, 0, 4095).value_or(where.rank));
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  where.launcher_serves_store = agent_store != nullptr && std::string(agent_store) == "True";
  return where;
}

int local_world_size_from_environment(int world_size) {
  return static_cast<int>(env_int("LOCAL_WORLD_SIZE", false, 1, world_size).value_or(world_size));
}

}  // namespace shardplan::cli
