# The filter is built by sbx-stage2's static library; the tests install it in forked children.
target_link_libraries(${target} PRIVATE sbx_stage2_seccomp)
