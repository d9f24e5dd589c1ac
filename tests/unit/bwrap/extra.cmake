# The bwrap translator, glob matcher and registry live in the plugin's static library.
target_link_libraries(${target} PRIVATE sbx_bwrap_impl)
# What sbx-stage2 checks of bwrap's work (ready byte, mount list): sbx_bwrap_checks.
target_link_libraries(${target} PRIVATE sbx_bwrap_checks)
# Some tests run the built sbx-stage2 under bwrap (SBX_BUILD_TREE/libexec/sbx/sbx-stage2):
# building the test builds it, so they never run a stale stage 2 or find none.
add_dependencies(${target} sbx-stage2)
# Stage 2's copy-on-write caches (the pure parts: which mounts move onto an overlay, its options).
target_link_libraries(${target} PRIVATE sbx_stage2_cache_overlays)
