# The plugin ABI's faults on the host: every untrusted kernel failing with the property that
# caught it, and a bad plugin reported with exit status 3 (or, for a kernel that fails or dies, as
# a FAIL). The verdicts of good kernels are test_plugins.cmake's.
#   cmake -DCERT=rmsnorm-cert -DLIBS=<dir of the plugins> -DOUT=<dir> -P test_plugins_faults.cmake
cmake_minimum_required(VERSION 3.24)
include(${CMAKE_CURRENT_LIST_DIR}/plugin_test_common.cmake)

set(untrusted ${LIBS}/librmsnorm_untrusted_plugin.so)
set(example ${LIBS}/librmsnorm_example_plugin.so)
set(budget --cases 20)

cert(out st certify --plugin ${untrusted} plugin.untrusted.declines_odd_rows --cases 10 --out ${OUT}/untrusted)
expect("plugin.untrusted.declines_odd_rows fails: properties below the floor, generated cases skipped" "${st}" 1 "${out}"
       "FAIL +plugin\\.untrusted\\.declines_odd_rows.*P1 BELOW FLOOR: checked [0-9]+ of 10 cases asked .*below the floor of 95%.*generated forward: [0-9]+ of 10 cases skipped")

# Each untrusted kernel and the property expected to catch it.
foreach(pair writes_nothing:P1 common_sizes_only:P1 caches_by_shape:P20 caches_by_pointer:P20 writes_outside:P15
             reads_outside:P8 writes_inputs:P1 nondeterministic:P11)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 kernel)
  list(GET pair 1 property)
  cert(out st certify --plugin ${untrusted} plugin.untrusted.${kernel} --cases 10 --out ${OUT}/untrusted)
  expect("plugin.untrusted.${kernel} fails, ${property} among the failures" "${st}" 1 "${out}"
         "FAIL +plugin\\.untrusted\\.${kernel}.*${property} FAIL")
endforeach()

# Bad plugins: a clear message and exit status 3.
cert(out st list --plugin ${LIBS}/no_such_plugin.so)
expect("a missing file" "${st}" 3 "${out}" "cannot be loaded")
cert(out st list --plugin ${LIBS}/librmsnorm_bad_plugin_1.so)
expect("a missing entry point" "${st}" 3 "${out}" "does not export rmsnorm_plugin_v1")
cert(out st list --plugin ${LIBS}/librmsnorm_bad_plugin_2.so)
expect("another ABI version" "${st}" 3 "${out}" "ABI version 99")
cert(out st list --plugin ${LIBS}/librmsnorm_bad_plugin_3.so)
expect("a null entry point" "${st}" 3 "${out}" "entry point is null")
cert(out st list --plugin ${LIBS}/librmsnorm_bad_plugin_4.so)
expect("two kernels of one name" "${st}" 3 "${out}" "two kernels are named")
cert(out st list --plugin ${example} --plugin ${example})
expect("one library loaded twice" "${st}" 3 "${out}" "duplicate variant name")
cert(out st list --plugin ${LIBS}/librmsnorm_bad_plugin_6.so)
expect("a shape beyond the limits" "${st}" 3 "${out}" "outside the limits")
cert(out st certify --plugin ${LIBS}/librmsnorm_bad_plugin_5.so plugin.faulty.fails ${budget} --out ${OUT}/faulty)
expect("a kernel that returns an error" "${st}" 1 "${out}" "this kernel always fails")
cert(out st certify --plugin ${LIBS}/librmsnorm_bad_plugin_5.so plugin.faulty.segfaults ${budget} --out ${OUT}/faulty)
expect("a kernel that segfaults" "${st}" 1 "${out}" "crashed on case")

if(NOT ok)
  message(FATAL_ERROR "plugin checks failed")
endif()
