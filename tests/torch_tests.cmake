# Tests of the LibTorch parts: their own executable, linked with shardplan_torch.
# The dlrm_datasets importer: files in the real format written with LibTorch (tests/torch/dlrm_files.cpp),
# the checked-in file written by Python's torch.save (tests/fixtures/dlrm/), bad files, and the CLI.
add_executable(shardplan_torch_tests
  torch/dlrm_files.cpp
  torch/dlrm_import_test.cpp
  torch/import_cli_test.cpp
)
target_link_libraries(shardplan_torch_tests PRIVATE shardplan_torch shardplan_test_support GTest::gtest_main shardplan_libtorch
                      ZLIB::ZLIB nlohmann_json::nlohmann_json shardplan_warnings shardplan_options)
target_compile_definitions(shardplan_torch_tests PRIVATE
  SHARDPLAN_BINARY="$<TARGET_FILE:shard-plan>"
  SHARDPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(shardplan_torch_tests shard-plan)
gtest_discover_tests(shardplan_torch_tests PROPERTIES LABELS torch DISCOVERY_TIMEOUT 120)

# A generator of large files in the same format, for measuring the importer at the real file's scale
# (see its header); built on request only.
add_executable(shardplan_make_dlrm_file EXCLUDE_FROM_ALL torch/make_dlrm_file.cpp)
target_link_libraries(shardplan_make_dlrm_file PRIVATE shardplan_libtorch shardplan_warnings shardplan_options)

# The plan-quality regression on data/tasks/ with the bundled model (tests/regression/regression_test.cpp).
add_executable(shardplan_regression_tests regression/regression_test.cpp)
target_link_libraries(shardplan_regression_tests PRIVATE shardplan_torch shardplan_bench GTest::gtest
                      nlohmann_json::nlohmann_json shardplan_warnings shardplan_options)
target_compile_definitions(shardplan_regression_tests PRIVATE SHARDPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(shardplan_regression_tests PROPERTIES LABELS regression DISCOVERY_TIMEOUT 120)

# cmake --install gives a working tool with its bundled model; a build directory anywhere finds the model.
add_test(NAME install_and_build_anywhere
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/install/install_test.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(install_and_build_anywhere PROPERTIES LABELS e2e)

# The example outputs in README.md and docs/ are what the commands print today (tools/regen_examples.py
# rewrites them; wall-clock times are ignored).
if(Python3_Interpreter_FOUND)
  add_test(NAME docs_examples_current
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/regen_examples.py --check --binary $<TARGET_FILE:shard-plan>
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs_examples_current PROPERTIES LABELS e2e ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  # tools/scale-bench end to end on small cases (a large-search one among them): every case plans, and
  # the JSON has what the README quotes.
  add_test(NAME scale_bench_runs
           COMMAND bash -c "set -o pipefail; ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/scale-bench --binary $<TARGET_FILE:shard-plan> --cases 40x4,1200x1024 --json -- --steps 3 --refine-rounds 2 | ${Python3_EXECUTABLE} -c \"import json,sys; d=json.load(sys.stdin); c=d['cases']; assert len(c)==2 and all(x['exit_code']==0 and x['seconds']>0 and x['peak_rss_bytes']>0 and x['search']['steps']<=3 for x in c), c; print('ok')\"")
  set_tests_properties(scale_bench_runs PROPERTIES LABELS e2e)
  # tools/emulate-hosts: usage errors, cleanup after a failure, a tiny collection across 2 emulated hosts
  # (skipped, exit 77, where network namespaces are not permitted).
  add_test(NAME emulate_hosts_script
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/emulate_hosts_test.sh $<TARGET_FILE:shard-plan> ${PROJECT_SOURCE_DIR})
  set_tests_properties(emulate_hosts_script PROPERTIES LABELS e2e SKIP_RETURN_CODE 77)
endif()
