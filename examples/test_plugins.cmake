# The plugin ABI end to end on the host: the example library's verdicts, the repro of its
# failure, the host reference through the C table, isolation between variants, and the floor.
# Untrusted kernels and bad plugins are test_plugins_faults.cmake's.
#   cmake -DCERT=rmsnorm-cert -DLIBS=<dir of the plugins> -DOUT=<dir> -P test_plugins.cmake
cmake_minimum_required(VERSION 3.24)
include(${CMAKE_CURRENT_LIST_DIR}/plugin_test_common.cmake)

set(example ${LIBS}/librmsnorm_example_plugin.so)
set(budget --cases 20)

cert(out st certify --plugin ${example} plugin.example.correct ${budget} --out ${OUT}/correct)
expect("plugin.example.correct passes" "${st}" 0 "${out}" "PASS +plugin\\.example\\.correct")

cert(out st certify --plugin ${example} plugin.example.eps_outside ${budget} --out ${OUT}/eps_outside)
expect("plugin.example.eps_outside fails" "${st}" 1 "${out}" "FAIL +plugin\\.example\\.eps_outside")
file(READ ${OUT}/eps_outside/plugin.example.eps_outside.md certificate)
string(REGEX MATCH "--line '[^']+'" line "${certificate}")
if(NOT line)
  message(SEND_ERROR "the eps_outside certificate holds no repro line:\n${certificate}")
  set(ok FALSE)
else()
  string(REGEX REPLACE "^--line '(.*)'$" "\\1" line "${line}")
  string(REPLACE ";" "\\;" line "${line}")  # one argument, though the line holds semicolons
  cert(out st repro --plugin ${example} --line "${line}")
  expect("repro of the eps_outside failure fails again" "${st}" 1 "${out}" "plugin\\.example\\.eps_outside")
endif()

# The host reference behind the C table: every op, type, convention and FP8 mode through the ABI.
cert(out st certify --plugin ${LIBS}/librmsnorm_reference_plugin.so plugin.reference.host ${budget} --out ${OUT}/reference)
expect("plugin.reference.host passes" "${st}" 0 "${out}" "PASS +plugin\\.reference\\.host")

# Isolation: a wrong kernel beside it changes nothing in another variant's certificate.
function(summary_line out_var)
  execute_process(COMMAND ${CERT} ${ARGN} OUTPUT_VARIABLE out ERROR_QUIET)
  string(REGEX MATCH "(PASS|FAIL) +host\\.reference[^\n]*" line "${out}")
  string(REGEX REPLACE "; [0-9.]+ s$" "" line "${line}")  # the time taken
  set(${out_var} "${line}" PARENT_SCOPE)
endfunction()
summary_line(alone certify host.reference --cases 10 --out ${OUT}/alone)
summary_line(beside certify --plugin ${example} host.reference --cases 10 --out ${OUT}/beside)
if(alone STREQUAL "" OR NOT alone STREQUAL beside)
  message(SEND_ERROR "host.reference's certificate changed with plugin.example.eps_outside loaded:\n  alone:  ${alone}\n  beside: ${beside}")
  set(ok FALSE)
else()
  message(STATUS "ok: host.reference's certificate is the same with a wrong plugin kernel loaded (${alone})")
endif()

# The floor (docs/certificates.md#the-floor): every property draw and generated case lies inside
# what the variant declares, so a property that applies checks at least 95% of the cases it asks
# and at most 5% of an op's generated cases are skipped. host.reference at this small budget
# (the certificate above), and the reference behind narrow claims (a D range, aligned or packed
# rows, a few types, conventions and FP8 modes), pass with no property below the floor (a kernel
# that declines half of what it claims fails on it: test_plugins_faults.cmake).
function(expect_floor_held what json)
  file(READ ${json} text)
  string(REGEX MATCHALL "\"checked_percent\": [0-9.e+-]+" shares "${text}")
  if(NOT text MATCHES "\"checked_floor_percent\": 95" OR
     text MATCHES "\"below_floor\": true" OR text MATCHES "\"too_many_skipped\": true" OR NOT shares)
    message(SEND_ERROR "${what}: a property below the floor, too many generated cases skipped, or no share (${json}):\n${shares}")
    set(ok FALSE PARENT_SCOPE)
  else()
    list(LENGTH shares n)
    message(STATUS "ok: ${what}: ${n} properties at or above the floor, no op with too many skipped cases")
  endif()
endfunction()
if(alone MATCHES "^PASS")
  expect_floor_held("host.reference at --cases 10" ${OUT}/alone/host.reference.json)
else()
  message(SEND_ERROR "host.reference does not pass at --cases 10: ${alone}")
  set(ok FALSE)
endif()
set(reference ${LIBS}/librmsnorm_reference_plugin.so)
cert(out st certify --plugin ${reference} plugin.reference.narrow,plugin.reference.packed --cases 10 --out ${OUT}/narrow)
expect("plugin.reference.narrow and .packed pass" "${st}" 0 "${out}"
       "PASS +plugin\\.reference\\.narrow.*PASS +plugin\\.reference\\.packed")
expect_floor_held("plugin.reference.narrow" ${OUT}/narrow/plugin.reference.narrow.json)
expect_floor_held("plugin.reference.packed" ${OUT}/narrow/plugin.reference.packed.json)
file(READ ${OUT}/narrow/plugin.reference.packed.md packed_md)
if(NOT packed_md MATCHES "\\| P7 \\|[^\n]*\\| \\*\\*n/a\\*\\* \\|[^\n]*claims none of the input types drawn \\(f16\\)")
  message(SEND_ERROR "P7 is not n/a on plugin.reference.packed (no fp16 rows claimed):\n${packed_md}")
  set(ok FALSE)
else()
  message(STATUS "ok: P7 is n/a on plugin.reference.packed: it claims no fp16 rows")
endif()
if(NOT ok)
  message(FATAL_ERROR "plugin checks failed")
endif()
