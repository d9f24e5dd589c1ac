# The confinement order's table and recorder (linux/confine/).
target_link_libraries(${target} PRIVATE sbx_linux_confine)
