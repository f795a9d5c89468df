# The backends of the all-to-all collector (collect-costs comm, calibrate --comm-ranks), each built
# where its headers are found; the planner builds without either, and a command that asks for a missing
# one says what to install (src/torch/comm_benchmark.cpp). Sets SHARDPLAN_WITH_GLOO, SHARDPLAN_WITH_NCCL
# and their include directories.
#
# Gloo: c10d's ProcessGroupGloo.hpp includes Gloo's headers, which Debian ships apart from LibTorch
# (libgloo-dev) and PyTorch's wheel does not ship at all; conda-forge has them (gloo).
find_path(SHARDPLAN_GLOO_INCLUDE_DIR gloo/algorithm.h
          HINTS ${TORCH_INCLUDE_DIRS} "$ENV{CONDA_PREFIX}/include" PATHS "${SHARDPLAN_DEPS_DIR}/gloo-include" NO_CACHE)
set(SHARDPLAN_WITH_GLOO OFF)
if(SHARDPLAN_GLOO_INCLUDE_DIR)
  set(SHARDPLAN_WITH_GLOO ON)
endif()

# NCCL: only a LibTorch built with CUDA has c10d's ProcessGroupNCCL; its header includes nccl.h, from the
# CUDA toolkit, the environment's nvidia-nccl wheel or conda. AUTO builds it wherever both are there.
set(SHARDPLAN_WITH_NCCL AUTO CACHE STRING "The NCCL backend of the all-to-all collector: AUTO, ON (required) or OFF")
if(NOT SHARDPLAN_WITH_NCCL STREQUAL "OFF")
  set(_nccl_hints ${CUDAToolkit_INCLUDE_DIRS} "$ENV{CONDA_PREFIX}/include")
  if(SHARDPLAN_TORCH_SITE_PACKAGES)
    list(PREPEND _nccl_hints "${SHARDPLAN_TORCH_SITE_PACKAGES}/nvidia/nccl/include")
  endif()
  find_path(SHARDPLAN_NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} NO_CACHE)
  set(_why "")
  if(NOT CAFFE2_USE_CUDA)
    set(_why "LibTorch ${Torch_VERSION} has no CUDA (c10d's NCCL backend comes only with a CUDA build)")
  elseif(NOT SHARDPLAN_NCCL_INCLUDE_DIR)
    set(_why "nccl.h was not found (the CUDA toolkit's include/, pip's nvidia-nccl wheel, or conda's nccl)")
  endif()
  if(_why STREQUAL "")
    set(SHARDPLAN_WITH_NCCL ON)
  elseif(SHARDPLAN_WITH_NCCL STREQUAL "AUTO")
    message(STATUS "all-to-all collector: no NCCL backend: ${_why}")
    set(SHARDPLAN_WITH_NCCL OFF)
  else()
    message(FATAL_ERROR "SHARDPLAN_WITH_NCCL=ON: ${_why}")
  endif()
endif()
message(STATUS "all-to-all collector backends: Gloo ${SHARDPLAN_WITH_GLOO}, NCCL ${SHARDPLAN_WITH_NCCL}")
