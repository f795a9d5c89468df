# Builds against a LibTorch that is not Debian's (PyTorch's own, with CUDA) on a machine without Debian's
# packages: fmt, spdlog, nlohmann/json and CLI11 come as headers from SHARDPLAN_DEPS_DIR (staged by
# scripts/build-cuda.sh stage-deps from this machine's Debian packages) and are compiled header-only.
# The directory is added with -I, ahead of LibTorch's -isystem directories, so a LibTorch that ships
# its own fmt headers cannot hand spdlog a different fmt.
set(_deps "${SHARDPLAN_DEPS_DIR}/include")
foreach(_header fmt/format.h spdlog/spdlog.h nlohmann/json.hpp CLI/CLI.hpp)
  if(NOT EXISTS "${_deps}/${_header}")
    message(FATAL_ERROR "SHARDPLAN_DEPS_DIR: ${_deps}/${_header} is missing; run scripts/build-cuda.sh stage-deps "
                        "on a machine with the Debian packages (docs/gpu.md)")
  endif()
endforeach()
# Plain (not IMPORTED) interface targets, so their directory is a -I and not a -isystem.
add_library(shardplan_dep_fmt INTERFACE)
target_include_directories(shardplan_dep_fmt INTERFACE "${_deps}")
target_compile_definitions(shardplan_dep_fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(shardplan_dep_spdlog INTERFACE)
# Header-only is spdlog's default without SPDLOG_COMPILED_LIB; Debian's tweakme.h asks for the external fmt.
target_link_libraries(shardplan_dep_spdlog INTERFACE shardplan_dep_fmt)
add_library(shardplan_dep_headers INTERFACE)
target_include_directories(shardplan_dep_headers INTERFACE "${_deps}")
add_library(fmt::fmt ALIAS shardplan_dep_fmt)
add_library(spdlog::spdlog ALIAS shardplan_dep_spdlog)
add_library(nlohmann_json::nlohmann_json ALIAS shardplan_dep_headers)
add_library(CLI11::CLI11 ALIAS shardplan_dep_headers)

# The model importer reads zip files with zlib: the machine may have the library without its headers.
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  find_library(_zlib NAMES z libz.so.1 REQUIRED)
  add_library(ZLIB::ZLIB UNKNOWN IMPORTED)
  set_target_properties(ZLIB::ZLIB PROPERTIES IMPORTED_LOCATION "${_zlib}" INTERFACE_INCLUDE_DIRECTORIES "${_deps}")
  set(ZLIB_FOUND TRUE)
endif()
