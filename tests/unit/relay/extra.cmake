# The relay is part of sbx-stage2's static libraries; the tests run it for real on loopback.
target_link_libraries(${target} PRIVATE sbx_stage2_relay)
