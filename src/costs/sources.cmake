# collect-costs compute: sources in shardplan_torch (only compute_benchmark.cpp includes LibTorch).
set(SHARDPLAN_COSTS_TORCH_SOURCES
  ${PROJECT_SOURCE_DIR}/src/torch/compute_benchmark.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/timing_memory.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/tbe_timer.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/compute_collector.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/plan_measurement.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/calibration_sampler.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/comm_calibration.cpp
)
set(SHARDPLAN_COSTS_CLI_SOURCES
  ${PROJECT_SOURCE_DIR}/src/cli/cmd_collect_costs.cpp
  ${PROJECT_SOURCE_DIR}/src/cli/collect_compute.cpp
)
