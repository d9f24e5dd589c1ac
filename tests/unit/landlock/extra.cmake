# The translator/probe library of the plugin and stage 2's Landlock library; rulesets are only
# ever applied in forked children.
target_link_libraries(${target} PRIVATE sbx_landlock_impl sbx_stage2_landlock)
