# Writes git_commit.h with the commit of the source tree (and whether it had local changes).
# Run at build time by cli/CMakeLists.txt; configure_file leaves the file alone when unchanged.
set(commit "unknown")
set(dirty 0)
find_package(Git QUIET)
if(DEFINED ENV{RMSNORM_SOURCE_COMMIT} AND NOT "$ENV{RMSNORM_SOURCE_COMMIT}" STREQUAL "")
  # A copy of the tree without its up-to-date .git (e.g. on a lent GPU host): the caller names
  # the commit the copy was made from (RMSNORM_SOURCE_DIRTY=1 when it had local changes).
  set(commit "$ENV{RMSNORM_SOURCE_COMMIT}")
  if("$ENV{RMSNORM_SOURCE_DIRTY}" STREQUAL "1")
    set(dirty 1)
  endif()
elseif(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0 AND out)
    set(commit ${out})
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                    OUTPUT_VARIABLE status RESULT_VARIABLE rc2 ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc2 EQUAL 0 AND status)
      set(dirty 1)
    endif()
  endif()
endif()
file(WRITE ${OUTPUT}.tmp "#pragma once\n#define RMSNORM_CERT_GIT_COMMIT \"${commit}\"\n#define RMSNORM_CERT_GIT_DIRTY ${dirty}\n")
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)
