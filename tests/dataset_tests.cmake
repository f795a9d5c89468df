# Unit tests of the dataset module, compiled into shardplan_unit_tests (paths relative to tests/).
set(SHARDPLAN_DATASET_TEST_SOURCES
  unit/dataset_random_test.cpp
  unit/dataset_access_counts_test.cpp
  unit/dataset_trace_test.cpp
  unit/dataset_trace_sequence_test.cpp
  unit/dataset_pool_test.cpp
  unit/dataset_task_set_test.cpp
  unit/dataset_task_drift_test.cpp
  unit/dataset_shipped_data_test.cpp
)
