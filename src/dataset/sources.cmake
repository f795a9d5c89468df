# Sources of the dataset module (pool generator, trace synthesis, task sets); part of shardplan_core.
set(SHARDPLAN_DATASET_SOURCES
  src/dataset/random.cpp
  src/dataset/access_counts.cpp
  src/dataset/trace.cpp
  src/dataset/trace_file.cpp
  src/dataset/reuse_calibration.cpp
  src/dataset/pool_generator.cpp
  src/dataset/pool_stats.cpp
  src/dataset/data_files.cpp
  src/dataset/task_set.cpp
  src/dataset/task_generator.cpp
)
# CLI subcommands over the dataset module.
set(SHARDPLAN_DATASET_CLI_SOURCES
  src/cli/cmd_gen_pool.cpp
  src/cli/cmd_gen_tasks.cpp
  src/cli/cmd_gen_traces.cpp
)
