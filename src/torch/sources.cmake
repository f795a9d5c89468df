# Sources that need LibTorch (the shardplan_torch library) and the CLI subcommands over them.
set(SHARDPLAN_TORCH_SOURCES
)
set(SHARDPLAN_TORCH_CLI_SOURCES
)
