# The filter is built by sbx-stage2's static library; the tests install it in forked children,
# both as libseccomp builds it at run time and as precompiled at build time.
target_link_libraries(${target} PRIVATE sbx_stage2_seccomp sbx_seccomp_programs)
