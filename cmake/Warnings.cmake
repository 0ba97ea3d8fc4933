# One INTERFACE target carries the warning policy; CUDA sources get the same host flags through
# -Xcompiler, and ptxas reports spills and local memory as errors (a spill fails the build).
add_library(rmsnorm_warnings INTERFACE)
target_compile_options(rmsnorm_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror -Wno-unknown-pragmas>
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror
    -Xptxas=-warn-spills,-warn-lmem-usage,--warning-as-error --expt-relaxed-constexpr>)
