# Tests of `collect-costs comm`: the workload generator, and the collector end to end on loopback
# (W = 2 spawned or started as a launcher would, resume, interrupts, dead and missing peers, bad options,
# given workloads), and bench --measure-comm, which times plans' all-to-alls through it.
add_executable(shardplan_comm_tests
  ${CMAKE_CURRENT_LIST_DIR}/comm/process.cpp
  ${CMAKE_CURRENT_LIST_DIR}/comm/comm_workload_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/comm/comm_cli_test.cpp
)
target_link_libraries(shardplan_comm_tests PRIVATE shardplan_torch shardplan_test_support GTest::gtest_main shardplan_libtorch
                      nlohmann_json::nlohmann_json shardplan_warnings shardplan_options)
target_compile_definitions(shardplan_comm_tests PRIVATE SHARDPLAN_BINARY="$<TARGET_FILE:shard-plan>"
                           SHARDPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(shardplan_comm_tests shard-plan)
gtest_discover_tests(shardplan_comm_tests PROPERTIES LABELS torch DISCOVERY_TIMEOUT 120)
