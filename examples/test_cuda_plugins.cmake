# The CUDA example plugins on a GPU: the example's verdicts (correct passes; first_4096 fails on
# the corpus case of 4100 rows), each untrusted device kernel failing with the property that
# caught it, and a kernel that breaks its CUDA context reported as a crash, not fatal.
#   cmake -DCERT=rmsnorm-cert -DLIBS=<dir of the plugins> -DOUT=<dir> -P test_cuda_plugins.cmake
cmake_minimum_required(VERSION 3.24)
execute_process(COMMAND ${CERT} list RESULT_VARIABLE st OUTPUT_VARIABLE out ERROR_VARIABLE err)
if("${out}${err}" MATCHES "no GPU here")
  message("SKIPPED: no GPU: the CUDA plugin examples need one")
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/plugin_test_common.cmake)

set(budget --cases 20)
set(example ${LIBS}/librmsnorm_cuda_example_plugin.so)
cert(out st certify --plugin ${example} plugin.cuda_example.correct ${budget} --out ${OUT})
expect("plugin.cuda_example.correct passes" "${st}" 0 "${out}" "PASS +plugin\\.cuda_example\\.correct")
cert(out st certify --plugin ${example} plugin.cuda_example.first_4096 ${budget} --out ${OUT})
expect("plugin.cuda_example.first_4096 fails on the rows past 4096" "${st}" 1 "${out}" "rows_past_4096")

foreach(pair writes_nothing:P1 common_sizes_only:P1 caches_by_shape:P20 writes_outside:P15 writes_inputs:P1
             nondeterministic:P11)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 kernel)
  list(GET pair 1 property)
  cert(out st certify --plugin ${LIBS}/librmsnorm_cuda_untrusted_plugin.so plugin.cuda_untrusted.${kernel} ${budget}
       --out ${OUT})
  expect("plugin.cuda_untrusted.${kernel} fails, ${property} among the failures" "${st}" 1 "${out}"
         "FAIL +plugin\\.cuda_untrusted\\.${kernel}.*${property} \\(CUDA variants\\) [A-Z]")
endforeach()

cert(out st certify --plugin ${LIBS}/librmsnorm_cuda_faulty_plugin.so plugin.cuda_faulty.null_write ${budget} --out ${OUT})
expect("a device kernel that breaks its context" "${st}" 1 "${out}" "crashed on case")

if(NOT ok)
  message(FATAL_ERROR "CUDA plugin checks failed")
endif()
