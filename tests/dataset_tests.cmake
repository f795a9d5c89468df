# Unit tests of the dataset module, compiled into shardplan_unit_tests (paths relative to tests/).
set(SHARDPLAN_DATASET_TEST_SOURCES
)
