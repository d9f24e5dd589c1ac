# The translator/probe library of the plugin and linux/landlock's library; rulesets are only
# ever applied in forked children.
target_link_libraries(${target} PRIVATE sbx_landlock_impl sbx_linux_landlock)
# The launch and metadata-guard tests run the built sbx-stage2 (SBX_BUILD_TREE/libexec/sbx):
# building the test builds it, so they never run a stale stage 2 or find none.
add_dependencies(${target} sbx-stage2)
