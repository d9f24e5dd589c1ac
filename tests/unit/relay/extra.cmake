# The relay is stage2/'s sbx_stage2_relay; the tests run it for real on loopback.
target_link_libraries(${target} PRIVATE sbx_stage2_relay sbx_stage2_proxy_connect)
