# Tests of cost measurement (compute benchmark and collector, cost-data format): LibTorch, own executable.
add_executable(shardplan_costs_tests
  costs/cost_data_test.cpp
  costs/compute_collector_test.cpp
  costs/plan_measurement_test.cpp
  costs/pretrain_test.cpp
)
target_link_libraries(shardplan_costs_tests PRIVATE shardplan_torch shardplan_core GTest::gtest_main shardplan_warnings
                                                    shardplan_options)
gtest_discover_tests(shardplan_costs_tests PROPERTIES LABELS torch DISCOVERY_TIMEOUT 120)
