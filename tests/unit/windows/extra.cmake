# The windows plan tests link the portable plan library (not the module) and load the built
# module file itself for the module tests.
target_link_libraries(${target} PRIVATE sbx_windows_impl ${CMAKE_DL_LIBS})
add_dependencies(${target} sbx-backend-windows)
target_compile_definitions(${target} PRIVATE
    SBX_WINDOWS_MODULE="$<TARGET_FILE:sbx-backend-windows>")
