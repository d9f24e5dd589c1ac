# What confines the caller (linux/caller/).
target_link_libraries(${target} PRIVATE sbx_linux_caller)
