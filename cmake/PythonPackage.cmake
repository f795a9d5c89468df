# The pip package's install (pyproject.toml; component python_package): the install prefix is
# site-packages/shardplan, so the binary lands in shardplan/bin and finds models/ and data/ beside it
# (find_bundled_path: the parent of bin/). The binary's RPATH reaches the environment's torch/lib (and the
# CUDA wheels torch loads) relative to itself, then by the absolute path it was built against, so it runs
# with no LD_LIBRARY_PATH. build-info.json records what it was built against, for shardplan.binary.
set(_component COMPONENT python_package)
if(SHARDPLAN_TORCH_SITE_PACKAGES)
  set(_rpath "$ORIGIN/../../torch/lib")
  # The CUDA runtime and NCCL wheels torch's own libraries load, for those this binary links directly.
  foreach(_dir IN LISTS SHARDPLAN_TORCH_WHEEL_LIBS)
    file(RELATIVE_PATH _relative "${SHARDPLAN_TORCH_SITE_PACKAGES}" "${_dir}")
    list(APPEND _rpath "$ORIGIN/../../${_relative}")
  endforeach()
  list(APPEND _rpath "${SHARDPLAN_TORCH_SITE_PACKAGES}/torch/lib")
  set_target_properties(shard-plan PROPERTIES INSTALL_RPATH "${_rpath}")
endif()

install(TARGETS shard-plan RUNTIME DESTINATION bin ${_component})
install(DIRECTORY models/ DESTINATION models ${_component})
# What the binary reads by name (hardware profiles, calibrate's default pool) and small inputs to try.
install(DIRECTORY data/hardware data/examples data/configs DESTINATION data ${_component})
install(FILES data/pool.json DESTINATION data ${_component})

set(_collectors "")
if(SHARDPLAN_WITH_GLOO)
  list(APPEND _collectors "\"gloo\"")
endif()
if(SHARDPLAN_WITH_NCCL)
  list(APPEND _collectors "\"nccl\"")
endif()
list(JOIN _collectors ", " _collectors)
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/build-info.json" CONTENT [[{
  "shard_plan_version": "@PROJECT_VERSION@",
  "torch_version": "@SHARDPLAN_TORCH_VERSION@",
  "torch_cuda": "@SHARDPLAN_TORCH_CUDA@",
  "comm_backends": [@_collectors@]
}
]] @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/build-info.json" DESTINATION bin ${_component})
