# Sources of the dataset module (pool generator, trace synthesis, task sets); part of shardplan_core.
set(SHARDPLAN_DATASET_SOURCES
)
# CLI subcommands over the dataset module.
set(SHARDPLAN_DATASET_CLI_SOURCES
)
