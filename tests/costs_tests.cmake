# Tests of cost measurement (compute benchmark and collector, cost-data format), pre-training and
# calibration: LibTorch, own executable. The calibrate command runs as a process (tests/comm/process).
add_executable(shardplan_costs_tests
  costs/cost_data_test.cpp
  costs/compute_collector_test.cpp
  costs/plan_measurement_test.cpp
  costs/pretrain_test.cpp
  costs/calibrate_test.cpp
  comm/process.cpp
)
target_link_libraries(shardplan_costs_tests PRIVATE shardplan_torch shardplan_test_support GTest::gtest_main
                                                    shardplan_warnings shardplan_options)
target_compile_definitions(shardplan_costs_tests PRIVATE SHARDPLAN_BINARY="$<TARGET_FILE:shard-plan>"
                           SHARDPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(shardplan_costs_tests shard-plan)
gtest_discover_tests(shardplan_costs_tests PROPERTIES LABELS torch DISCOVERY_TIMEOUT 120)
