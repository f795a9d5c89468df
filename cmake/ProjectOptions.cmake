# Warnings and build options shared by every target, each flag with its reason.
add_library(shardplan_warnings INTERFACE)
target_compile_options(shardplan_warnings INTERFACE
  -Wall -Wextra                # the common mistakes
  -Wpedantic                   # stay within standard C++
  -Wshadow                     # a local hiding a member or outer name is a classic planner bug
  -Wnon-virtual-dtor           # interfaces (Planner, CostModel) are deleted through base pointers
  -Woverloaded-virtual         # a misspelt override silently adds an overload
  -Wimplicit-fallthrough
)
if(SHARDPLAN_WERROR)
  target_compile_options(shardplan_warnings INTERFACE -Werror)
endif()

add_library(shardplan_options INTERFACE)
if(SHARDPLAN_SANITIZE)
  target_compile_options(shardplan_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                     -fno-sanitize-recover=all)
  target_link_options(shardplan_options INTERFACE -fsanitize=address,undefined)
endif()
if(SHARDPLAN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SHARDPLAN_FUZZ needs clang (CXX=clang++), libFuzzer ships with it")
  endif()
  # Coverage feedback for libFuzzer in everything the fuzz targets call; the targets link the driver.
  target_compile_options(shardplan_options INTERFACE -fsanitize=fuzzer-no-link)
endif()
