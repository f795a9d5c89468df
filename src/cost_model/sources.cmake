# Cost models: the interface, features, plain-C++ inference and analytic model (core); training and
# model files (LibTorch); and their subcommands.
set(SHARDPLAN_COST_MODEL_CORE_SOURCES
  ${PROJECT_SOURCE_DIR}/src/cost_model/cost_features.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/neural_cost_model.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/analytic_cost_model.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/cost_model.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/metrics.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/model_location.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/model_hardware.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/cost_correction.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/comm_correction.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/comm_structure.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/fabric_fit.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/allreduce_fit.cpp
  ${PROJECT_SOURCE_DIR}/src/cost_model/rowwise_fit.cpp
)
set(SHARDPLAN_COST_MODEL_TORCH_SOURCES
  ${PROJECT_SOURCE_DIR}/src/torch/training.cpp
  ${PROJECT_SOURCE_DIR}/src/torch/pretrain.cpp
  ${PROJECT_SOURCE_DIR}/src/torch/model_files.cpp
  ${PROJECT_SOURCE_DIR}/src/torch/calibrate.cpp
)
set(SHARDPLAN_COST_MODEL_CLI_SOURCES
  ${PROJECT_SOURCE_DIR}/src/cli/cmd_pretrain.cpp
  ${PROJECT_SOURCE_DIR}/src/cli/cmd_eval_model.cpp
  ${PROJECT_SOURCE_DIR}/src/cli/cmd_calibrate.cpp
)
