# The link rules between the source folders (docs/ARCHITECTURE.md, "Source layout"), checked on
# the targets' own link lists at the end of the configure: the CMake links are the rules, and
# this keeps them. A target's folder is where it is defined (its SOURCE_DIR); a ruled folder may
# link only
#   sdk/              the SDK itself
#   linux/...         the SDK and linux/
#   plugins/<name>/   the SDK, linux/ and plugins/<name>/
#   stage2/           the SDK, linux/ and stage2/
# plus the build-option targets defined in the top-level folder (sbx_warnings, sbx_hardening,
# sbx_libseccomp), imported system targets other than Boost, spdlog and fmt (libsbx's, which
# a plugin must not carry), and plain library files or flags. A target of another folder that
# a ruled folder may link all the same names that folder in its SBX_LINKABLE_BY property
# (sbx_bwrap_checks: stage2). Unruled folders (core/, tests/, bench/, bindings/) link anything.
# Checking each ruled target's direct links is enough: every target they may link is itself
# ruled, a build-option target or imported.

# The folder class of a source directory below root: sdk, linux, stage2, plugins/<name>, root,
# or the first path component for an unruled folder.
function(_sbx_link_rules_folder root dir out)
  file(RELATIVE_PATH rel "${root}" "${dir}")
  if(rel STREQUAL "")
    set(${out} "root" PARENT_SCOPE)
  elseif(rel MATCHES "^(plugins/[^/]+)")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(rel MATCHES "^([^/]+)")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  endif()
endfunction()

# The folder classes a target of `folder` may link; empty for an unruled folder.
function(_sbx_link_rules_allowed folder out)
  if(folder STREQUAL "sdk")
    set(allowed sdk)
  elseif(folder STREQUAL "linux")
    set(allowed sdk linux)
  elseif(folder MATCHES "^plugins/")
    set(allowed sdk linux ${folder})
  elseif(folder STREQUAL "stage2")
    set(allowed sdk linux stage2)
  else()
    set(allowed "")
  endif()
  set(${out} "${allowed}" PARENT_SCOPE)
endfunction()

# Every target defined in dir and below.
function(_sbx_link_rules_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _sbx_link_rules_targets("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# The names a link list entry stands for: generator expressions CMake itself writes
# ($<LINK_ONLY:x> for a static library's private link, $<LINK_LIBRARY:feature,x...>,
# $<BUILD_INTERFACE:x>) are unwrapped; install-only entries and the directory markers of
# cross-folder target_link_libraries calls (::@...) stand for nothing. Any other generator
# expression is refused: the check cannot read it, so it cannot vouch for it.
function(_sbx_link_rules_names item target out)
  set(names "")
  if(item MATCHES "^::@" OR item MATCHES "^\\$<INSTALL_INTERFACE:")
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  if(item MATCHES "^\\$<(LINK_ONLY|BUILD_INTERFACE):(.*)>$")
    _sbx_link_rules_names("${CMAKE_MATCH_2}" "${target}" names)
  elseif(item MATCHES "^\\$<LINK_LIBRARY:[^,>]+,(.*)>$")
    string(REPLACE "," ";" parts "${CMAKE_MATCH_1}")
    foreach(part IN LISTS parts)
      _sbx_link_rules_names("${part}" "${target}" part_names)
      list(APPEND names ${part_names})
    endforeach()
  elseif(item MATCHES "\\$<")
    message(FATAL_ERROR "sbx link rules: ${target} links '${item}', a generator expression the "
                        "check cannot read (cmake/SbxLinkRules.cmake)")
  else()
    set(names "${item}")
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# Why `name`, linked by `target` of `folder`, breaks the rules; empty when it does not.
function(_sbx_link_rules_violation root target folder allowed name out)
  set(${out} "" PARENT_SCOPE)
  if(NOT TARGET "${name}")
    return()  # a library file or a flag
  endif()
  get_target_property(aliased "${name}" ALIASED_TARGET)
  if(aliased)
    set(name "${aliased}")
  endif()
  get_target_property(imported "${name}" IMPORTED)
  if(imported)
    if(name MATCHES "^(Boost|spdlog|fmt)::")
      set(${out} "${target} (${folder}/) links ${name}: Boost, spdlog and fmt are libsbx's, never ${folder}/'s" PARENT_SCOPE)
    endif()
    return()
  endif()
  get_target_property(dir "${name}" SOURCE_DIR)
  _sbx_link_rules_folder("${root}" "${dir}" linked_folder)
  if(linked_folder STREQUAL "root" OR linked_folder IN_LIST allowed)
    return()
  endif()
  get_target_property(linkable_by "${name}" SBX_LINKABLE_BY)
  if(linkable_by AND folder IN_LIST linkable_by)
    return()
  endif()
  list(JOIN allowed ", " allowed_text)
  set(${out} "${target} (${folder}/) links ${name} (${linked_folder}/): ${folder}/ may link only "
             "${allowed_text}" PARENT_SCOPE)
endfunction()

# Checks every target below root; fails the configure naming each offending link.
function(sbx_check_link_rules)
  cmake_parse_arguments(arg "" "ROOT" "" ${ARGN})
  _sbx_link_rules_targets("${arg_ROOT}" targets)
  set(violations "")
  foreach(target IN LISTS targets)
    get_target_property(dir "${target}" SOURCE_DIR)
    _sbx_link_rules_folder("${arg_ROOT}" "${dir}" folder)
    _sbx_link_rules_allowed("${folder}" allowed)
    if(NOT allowed)
      continue()
    endif()
    get_target_property(type "${target}" TYPE)
    set(items "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct "${target}" LINK_LIBRARIES)
      if(direct)
        list(APPEND items ${direct})
      endif()
    endif()
    get_target_property(interface "${target}" INTERFACE_LINK_LIBRARIES)
    if(interface)
      list(APPEND items ${interface})
    endif()
    foreach(item IN LISTS items)
      _sbx_link_rules_names("${item}" "${target}" names)
      foreach(name IN LISTS names)
        _sbx_link_rules_violation("${arg_ROOT}" "${target}" "${folder}" "${allowed}" "${name}"
                                  violation)
        if(violation)
          list(APPEND violations "${violation}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(violations)
    list(REMOVE_DUPLICATES violations)
    list(JOIN violations "\n  " text)
    message(FATAL_ERROR "sbx link rules broken (docs/ARCHITECTURE.md, \"Source layout\"):\n"
                        "  ${text}")
  endif()
endfunction()
