# collect-costs comm: the all-to-all collector (c10d) and its CLI handler.
# Only comm_benchmark.cpp includes LibTorch; the workload generator and the local spawner are plain C++.
set(SHARDPLAN_COMM_TORCH_SOURCES
  ${PROJECT_SOURCE_DIR}/src/costs/comm_workload.cpp
  ${PROJECT_SOURCE_DIR}/src/costs/comm_spawn.cpp
  ${PROJECT_SOURCE_DIR}/src/torch/comm_benchmark.cpp
)
set(SHARDPLAN_COMM_CLI_SOURCES
  ${PROJECT_SOURCE_DIR}/src/cli/collect_comm.cpp
)

# c10d's ProcessGroupGloo.hpp includes Gloo's headers, which Debian ships apart from LibTorch.
# A LibTorch may ship Gloo's headers beside its own; PyTorch 2.11's wheel does not, and takes the copy that
# scripts/build-cuda.sh stages from Debian's libgloo-dev (SHARDPLAN_DEPS_DIR).
find_path(SHARDPLAN_GLOO_INCLUDE_DIR gloo/algorithm.h HINTS ${TORCH_INCLUDE_DIRS}
          PATHS "${SHARDPLAN_DEPS_DIR}/gloo-include" NO_CACHE)
if(NOT SHARDPLAN_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "collect-costs comm needs Gloo's headers (gloo/algorithm.h), which c10d's ProcessGroupGloo.hpp "
                      "includes: install libgloo-dev (Debian), or configure with -DSHARDPLAN_WITH_TORCH=OFF")
endif()
# A system directory (/usr/include) must not be added again: it would break #include_next.
string(REGEX REPLACE "(.)/+$" "\\1" SHARDPLAN_GLOO_INCLUDE_DIR "${SHARDPLAN_GLOO_INCLUDE_DIR}")  # as the lists spell it
set(_torch_includes ${TORCH_INCLUDE_DIRS})
list(TRANSFORM _torch_includes REPLACE "(.)/+$" "\\1")
if(NOT SHARDPLAN_GLOO_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND
   NOT SHARDPLAN_GLOO_INCLUDE_DIR IN_LIST _torch_includes)
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/torch/comm_benchmark.cpp APPEND PROPERTY
               INCLUDE_DIRECTORIES ${SHARDPLAN_GLOO_INCLUDE_DIR})
endif()

# NCCL: only a LibTorch built with CUDA and NCCL (e.g. the CUDA libtorch from pytorch.org) has c10d's
# ProcessGroupNCCL; Debian's libtorch-dev is CPU-only.
option(SHARDPLAN_WITH_NCCL "Build the NCCL backend of collect-costs comm (needs a CUDA+NCCL LibTorch)" OFF)
if(SHARDPLAN_WITH_NCCL)
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/torch/comm_benchmark.cpp APPEND PROPERTY
               COMPILE_DEFINITIONS SHARDPLAN_WITH_NCCL=1 USE_C10D_NCCL=1)
endif()
