# shardplan_libtorch: what a target that includes LibTorch links (instead of ${TORCH_LIBRARIES}).
# PyTorch's wheel ships its own, newer fmt (torch/include/fmt) on an -isystem path that comes before the
# system's include directory: the translation units that include LibTorch would then compile spdlog and
# fmt's calls against that fmt while linking the fmt and spdlog that find_package found. A directory of
# links to the found fmt and spdlog headers, added with -I, comes first. (Staged headers, SHARDPLAN_DEPS_DIR,
# are already an -I directory.)
add_library(shardplan_libtorch INTERFACE)
if(NOT SHARDPLAN_DEPS_DIR)
  set(_links "${PROJECT_BINARY_DIR}/dependency-headers")
  file(MAKE_DIRECTORY "${_links}")
  foreach(_pair "fmt::fmt|fmt/format.h|fmt" "spdlog::spdlog|spdlog/spdlog.h|spdlog")
    string(REPLACE "|" ";" _fields "${_pair}")
    list(GET _fields 0 _target)
    list(GET _fields 1 _header)
    list(GET _fields 2 _dir)
    get_target_property(_includes ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    # Only where the package says (or the compiler's own directories): CMAKE_PREFIX_PATH holds torch's.
    find_path(_found ${_header} PATHS ${_includes} ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES} NO_DEFAULT_PATH NO_CACHE)
    if(NOT _found)
      message(FATAL_ERROR "${_target}: ${_header} is not under its include directories (${_includes})")
    endif()
    file(CREATE_LINK "${_found}/${_dir}" "${_links}/${_dir}" SYMBOLIC)
    unset(_found)
  endforeach()
  target_include_directories(shardplan_libtorch INTERFACE "${_links}")
endif()
target_link_libraries(shardplan_libtorch INTERFACE ${TORCH_LIBRARIES})
# A CUDA torch from pip loads NCCL and CUDA from its nvidia-* wheels (its libraries' RPATH); the linker must
# resolve them there too, not in an older system copy (the CUDA toolkit's libnccl lacks symbols torch needs).
foreach(_dir IN LISTS SHARDPLAN_TORCH_WHEEL_LIBS)
  target_link_options(shardplan_libtorch INTERFACE "LINKER:-rpath-link,${_dir}")
endforeach()
# LibTorch 2.10 on needs C++20 (its CMake package says so on the torch target); the rest of shard-plan stays
# C++17, so only what includes LibTorch compiles as its headers need.
get_target_property(_torch_standard torch CXX_STANDARD)
if(_torch_standard AND _torch_standard GREATER 17)
  target_compile_features(shardplan_libtorch INTERFACE cxx_std_${_torch_standard})
endif()
