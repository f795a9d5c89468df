# LibTorch from the torch package of the Python that builds (pip install --no-build-isolation ., or
# -DSHARDPLAN_TORCH_FROM_PYTHON=ON): torch.utils.cmake_prefix_path goes on CMAKE_PREFIX_PATH. Sets
# SHARDPLAN_TORCH_VERSION, SHARDPLAN_TORCH_CUDA (torch.version.cuda, empty for a CPU build) and
# SHARDPLAN_TORCH_SITE_PACKAGES (the site-packages that holds torch, for the installed binary's RPATH) and
# SHARDPLAN_TORCH_WHEEL_LIBS (site-packages/nvidia/*/lib: the CUDA, cuDNN and NCCL wheels torch's libraries load).
# A CUDA build of torch needs the CUDA toolkit at build time: its CMake package looks for it.
if(NOT Python_EXECUTABLE)
  find_package(Python COMPONENTS Interpreter REQUIRED)
endif()
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c
          "import os, torch; print(torch.utils.cmake_prefix_path); print(torch.__version__.split('+')[0]); print(torch.version.cuda or ''); print(os.path.dirname(os.path.dirname(torch.__file__)))"
  RESULT_VARIABLE _torch_found
  OUTPUT_VARIABLE _torch_facts
  ERROR_VARIABLE _torch_error
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_found EQUAL 0)
  string(REGEX REPLACE ".*\n([^\n]+)\n?$" "\\1" _torch_error "${_torch_error}")
  message(FATAL_ERROR
    "shard-plan builds against the torch of the Python that builds it, and ${Python_EXECUTABLE} cannot import "
    "torch (${_torch_error}). Install torch in this environment first, and build with "
    "'pip install --no-build-isolation .' (pip's default isolated build environment holds no torch).")
endif()
string(REPLACE "\n" ";" _torch_facts "${_torch_facts}")
list(GET _torch_facts 0 _torch_prefix)
list(GET _torch_facts 1 SHARDPLAN_TORCH_VERSION)
list(GET _torch_facts 2 SHARDPLAN_TORCH_CUDA)
list(GET _torch_facts 3 SHARDPLAN_TORCH_SITE_PACKAGES)
# The torch package's root too: torch's CMake package finds c10 and torch with find_library, whose
# system paths would otherwise win over the package's lib/ (Debian's libtorch-dev is libc10.so too).
list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}" "${SHARDPLAN_TORCH_SITE_PACKAGES}/torch")
file(GLOB SHARDPLAN_TORCH_WHEEL_LIBS LIST_DIRECTORIES true "${SHARDPLAN_TORCH_SITE_PACKAGES}/nvidia/*/lib")
if(SHARDPLAN_TORCH_CUDA)
  message(STATUS "LibTorch: torch ${SHARDPLAN_TORCH_VERSION} with CUDA ${SHARDPLAN_TORCH_CUDA}, from ${Python_EXECUTABLE}")
  # torch's CMake package (Caffe2's cuda.cmake) needs the CUDA toolkit: check first, for a plain message.
  find_package(CUDAToolkit QUIET)
  string(REGEX MATCH "^[0-9]+" _torch_cuda_major "${SHARDPLAN_TORCH_CUDA}")
  if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR
      "torch ${SHARDPLAN_TORCH_VERSION} in this environment is a CUDA ${SHARDPLAN_TORCH_CUDA} build, and its CMake "
      "package needs a CUDA ${_torch_cuda_major}.x toolkit (nvcc and the CUDA headers) to build against it; none "
      "was found. Install one (NVIDIA's installer, or conda install -c nvidia cuda-toolkit=${SHARDPLAN_TORCH_CUDA}), "
      "put its bin/ on PATH or set CUDAToolkit_ROOT, then build again; or build in an environment with the CPU "
      "torch (pip install torch --index-url https://download.pytorch.org/whl/cpu).")
  endif()
  if(NOT CUDAToolkit_VERSION_MAJOR STREQUAL _torch_cuda_major)
    message(WARNING "torch was built with CUDA ${SHARDPLAN_TORCH_CUDA}, the toolkit found is ${CUDAToolkit_VERSION} "
                    "(${CUDAToolkit_BIN_DIR}): a different major version may not build or load")
  endif()
else()
  message(STATUS "LibTorch: torch ${SHARDPLAN_TORCH_VERSION} (CPU), from ${Python_EXECUTABLE}")
endif()
