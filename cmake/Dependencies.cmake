# fmt, spdlog, nlohmann/json and CLI11: from the system's package manager (apt, conda-forge) through
# find_package, or, on a machine with neither, from headers staged by scripts/build-cuda.sh stage-deps
# (SHARDPLAN_DEPS_DIR). A missing one stops configuration with one message that names every missing
# package, as apt and conda spell them.
if(SHARDPLAN_DEPS_DIR)
  include(${CMAKE_CURRENT_LIST_DIR}/VendoredDeps.cmake)
  return()
endif()

# name to find_package | Debian package | conda-forge package
set(_shardplan_deps
  "fmt|libfmt-dev|fmt"
  "spdlog|libspdlog-dev|spdlog"
  "nlohmann_json|nlohmann-json3-dev|nlohmann_json"
  "CLI11|libcli11-dev|cli11")
set(_missing_names "")
set(_missing_apt "")
set(_missing_conda "")
foreach(_dep IN LISTS _shardplan_deps)
  string(REPLACE "|" ";" _fields "${_dep}")
  list(GET _fields 0 _name)
  list(GET _fields 1 _apt)
  list(GET _fields 2 _conda)
  if(_name STREQUAL "nlohmann_json")
    find_package(${_name} 3.10 QUIET)
  else()
    find_package(${_name} QUIET)
  endif()
  if(NOT ${_name}_FOUND)
    list(APPEND _missing_names ${_name})
    list(APPEND _missing_apt ${_apt})
    list(APPEND _missing_conda ${_conda})
  endif()
endforeach()
if(_missing_names)
  list(JOIN _missing_names ", " _names)
  list(JOIN _missing_apt " " _apt)
  list(JOIN _missing_conda " " _conda)
  message(FATAL_ERROR
    "shard-plan needs ${_names}, which CMake's find_package did not find. Install them:\n"
    "  Debian or Ubuntu:  sudo apt-get install ${_apt}\n"
    "  conda:             conda install -c conda-forge ${_conda}\n"
    "(or add where they are installed to CMAKE_PREFIX_PATH), then build again.")
endif()
