# The filter is built by linux/seccomp's static library; the tests install it in forked children,
# both as libseccomp builds it at run time and as precompiled at build time (with the compact
# table of bpf_table.hpp, whose interpreter and proof are tested here too).
target_link_libraries(${target} PRIVATE sbx_linux_seccomp sbx_linux_seccomp_programs
                      sbx_linux_bpf_table)
