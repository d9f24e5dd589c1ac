# The bwrap translator, glob matcher and registry live in the plugin's static library.
target_link_libraries(${target} PRIVATE sbx_bwrap_impl)
