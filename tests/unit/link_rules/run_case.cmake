# Configures the fixture project with one case of links; EXPECT empty: the configure must
# succeed; otherwise it must fail with output matching EXPECT (the offending link named).
file(REMOVE_RECURSE "${WORK}")
execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${FIXTURE}" -B "${WORK}" -G "${GENERATOR}"
            "-DSBX_FIXTURE_CASE=${CASE}" "-DSBX_LINK_RULES=${RULES}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(EXPECT STREQUAL "")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "case ${CASE}: the good graph failed the configure (${rc}):\n${all}")
  endif()
  message(STATUS "case ${CASE}: configured")
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "case ${CASE}: the bad link was not caught:\n${all}")
  endif()
  if(NOT all MATCHES "${EXPECT}")
    message(FATAL_ERROR "case ${CASE}: failed, but without naming the link '${EXPECT}':\n${all}")
  endif()
  message(STATUS "case ${CASE}: refused as expected")
endif()
