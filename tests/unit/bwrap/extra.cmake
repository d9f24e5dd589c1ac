# The bwrap translator, glob matcher and registry live in the plugin's static library.
target_link_libraries(${target} PRIVATE sbx_bwrap_impl)
# What sbx-stage2 checks of bwrap's work (ready byte, mount list): sbx_bwrap_checks.
target_link_libraries(${target} PRIVATE sbx_bwrap_checks)
