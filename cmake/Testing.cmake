# One test source → one executable, registered with ctest under labels taken from its Catch2
# tags: the default run excludes [slow] and [gpu]; "<name>.slow" runs [slow] (label slow);
# "<name>.gpu" runs [gpu] (label gpu) and is reported as skipped (exit 77) without a device.
function(rmsnorm_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;SUITES;GPU_SHARDS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE rmsnorm_testmain ${T_LIBS} rmsnorm_warnings)
  target_compile_features(${name} PRIVATE cxx_std_17)
  if(NOT T_SUITES)
    set(T_SUITES default)
  endif()
  foreach(suite IN LISTS T_SUITES)
    if(suite STREQUAL "default")
      add_test(NAME ${name} COMMAND ${name} "~[slow]~[gpu]")
      set_tests_properties(${name} PROPERTIES LABELS "host")
    elseif(suite STREQUAL "slow")
      add_test(NAME ${name}.slow COMMAND ${name} "[slow]~[gpu]")
      set_tests_properties(${name}.slow PROPERTIES LABELS "slow")
    elseif(suite STREQUAL "gpu")
      # GPU_SHARDS: tags (without brackets) whose [gpu] test cases run as tests of their own,
      # ${name}.gpu.<tag>, so that `ctest -j` overlaps them; ${name}.gpu runs every other [gpu]
      # test case (nothing is left out). Each takes 2 OpenMP threads (the gpu preset runs 8 at
      # once), or N for an entry written tag:N (cases of several GiB, filled and checked on the host).
      set(rest "[gpu]")
      foreach(entry IN LISTS T_GPU_SHARDS)
        string(REPLACE ":" ";" parts "${entry}")
        list(GET parts 0 tag)
        set(threads 2)
        list(LENGTH parts n)
        if(n GREATER 1)
          list(GET parts 1 threads)
        endif()
        add_test(NAME ${name}.gpu.${tag} COMMAND ${name} "[gpu][${tag}]")
        set_tests_properties(${name}.gpu.${tag} PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77
                             ENVIRONMENT "OMP_NUM_THREADS=${threads};OMP_WAIT_POLICY=passive")
        string(APPEND rest "~[${tag}]")
      endforeach()
      add_test(NAME ${name}.gpu COMMAND ${name} "${rest}")
      set_tests_properties(${name}.gpu PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77
                           ENVIRONMENT "OMP_NUM_THREADS=2;OMP_WAIT_POLICY=passive")
    endif()
  endforeach()
endfunction()
