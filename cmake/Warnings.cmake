# One INTERFACE target carries the warning policy; CUDA sources get the same host flags through
# -Xcompiler, and ptxas reports spills and local memory as errors (a spill fails the build).
add_library(rmsnorm_warnings INTERFACE)
target_compile_options(rmsnorm_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror -Wno-unknown-pragmas>
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror
    -Xptxas=-warn-spills,-warn-lmem-usage,--warning-as-error --expt-relaxed-constexpr>)

# A shared library of ours is loaded into host processes (Python with PyTorch, a user's program)
# that hold their own C++ runtime. It exports its C entry points (names starting with `prefix`)
# and nothing else: what it takes from static archives (our libraries, and a C++ runtime that a
# toolchain links statically) and the C++ templates it instantiates stay private to it, so that
# none of its references is bound to another copy of the same code in the host, nor the host's to
# ours. Checked by the test <target>.exports (cmake/exports_only.cmake).
function(rmsnorm_export_only target prefix)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
    return()
  endif()
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}.exports.map)
  file(CONFIGURE OUTPUT ${script} CONTENT "{\n  global: ${prefix}*;\n  local: *;\n};\n")
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL" "LINKER:--version-script=${script}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${script})
  if(RMSNORM_TESTS)
    add_test(NAME ${target}.exports
             COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:${target}> -DPREFIX=${prefix}
                     -P ${PROJECT_SOURCE_DIR}/cmake/exports_only.cmake)
    set_tests_properties(${target}.exports PROPERTIES LABELS "host")
  endif()
endfunction()
