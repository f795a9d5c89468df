// libFuzzer target: the tables parser (shard-plan --tables), then the plan a fast planner makes of it.
#include "fuzz_input.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/planners/planner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  try {
    std::vector<Table> tables = parse_tables(parse_json_text(fuzz::as_text(data, size), "tables.json"), "tables.json");
    // Planning is part of reading a hostile file: sizes near the limits must not overflow anything.
    if (tables.size() <= 64) {
      Cluster cluster;
      cluster.num_devices = 4;
      cluster.memory_per_device_bytes = 1ll << 30;
      make_planner("size_greedy", PlannerConfig{})->plan(tables, cluster);
    }
  } catch (const InputError&) {
  } catch (const InfeasibleError&) {
  }
  return 0;
}
