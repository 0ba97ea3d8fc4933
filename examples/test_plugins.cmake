# The plugin ABI end to end on the host: the example library's verdicts, the repro of its
# failure, every untrusted kernel failing with the property that caught it, and the faults of a
# bad plugin reported with exit status 3 (or, for a kernel that fails or dies, as a FAIL).
#   cmake -DCERT=rmsnorm-cert -DLIBS=<dir of the plugins> -DOUT=<dir> -P test_plugins.cmake
cmake_minimum_required(VERSION 3.24)
include(${CMAKE_CURRENT_LIST_DIR}/plugin_test_common.cmake)

set(example ${LIBS}/librmsnorm_example_plugin.so)
set(untrusted ${LIBS}/librmsnorm_untrusted_plugin.so)
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
# rows, a few types, conventions and FP8 modes), pass with no property below the floor; a kernel
# that declines half of what it claims fails on it.
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
