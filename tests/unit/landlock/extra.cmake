# The translator/probe library of the plugin and linux/landlock's library; rulesets are only
# ever applied in forked children.
target_link_libraries(${target} PRIVATE sbx_landlock_impl sbx_linux_landlock)
