# Sources that need LibTorch (the shardplan_torch library) and the CLI subcommands over them.
# Of the importer's files only saved_tensors.cpp includes LibTorch headers (slow to compile); the zip
# reader and the statistics are plain C++.
set(SHARDPLAN_TORCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/zip_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/input_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pickle_guard.cpp
  ${CMAKE_CURRENT_LIST_DIR}/saved_tensors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dlrm_import.cpp
)
set(SHARDPLAN_TORCH_CLI_SOURCES
  ${PROJECT_SOURCE_DIR}/src/cli/cmd_import_dlrm.cpp
)
# zlib unpacks .pt.gz files and deflated zip entries (Debian: zlib1g-dev).
if(NOT TARGET ZLIB::ZLIB)  # cmake/VendoredDeps.cmake may have found it already
  find_package(ZLIB REQUIRED)
endif()
list(APPEND SHARDPLAN_TORCH_EXTRA_LIBS ZLIB::ZLIB)
