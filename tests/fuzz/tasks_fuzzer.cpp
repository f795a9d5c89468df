// libFuzzer target: the task-set parser (shard-plan bench --tasks).
#include "fuzz_input.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/dataset/task_set.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  try {
    TaskSet set = parse_task_set(parse_json_text(fuzz::as_text(data, size), "tasks.json"), "tasks.json");
    validate_cluster(set.cluster());
    format_task_set(set);
  } catch (const InputError&) {
  }
  return 0;
}
