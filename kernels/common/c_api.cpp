// include/rmsnorm/rmsnorm_c.h: the dispatcher and the chosen variant behind C entry points.
#include "rmsnorm/rmsnorm_c.h"

#include <cstdio>
#include <exception>
#include <string>

#include "rmsnorm/abi_args.h"
#include "rmsnorm/variant.h"

namespace {

using rmsnorm::Status;

void write(char* out, std::size_t size, const std::string& text) {
  if (out && size > 0) std::snprintf(out, size, "%s", text.c_str());
}

rmsnorm::Memory memory_of(std::int32_t m) { return m == RMSNORM_MEMORY_DEVICE ? rmsnorm::Memory::device : rmsnorm::Memory::host; }

template <class Args, class Pick, class Run>
std::int32_t launch(const Args& a, std::int32_t memory, Pick pick, Run run, char* variant, std::size_t variant_size,
                    char* message, std::size_t message_size) {
  try {
    if (memory == RMSNORM_MEMORY_DEVICE) {
      // Asked once per process: every op of a model comes through here.
      static const Status device = rmsnorm::device_status();
      if (const Status& s = device; !s.ok()) {
        write(message, message_size, s.reason);
        return static_cast<std::int32_t>(s.code);
      }
    }
    const rmsnorm::Variant* v = pick(a, memory_of(memory));
    if (!v) {
      write(message, message_size, "no variant takes these arguments (they break the contract, or lie outside every "
                                   "variant's range): run rmsnorm-cert repro on the case for the reasons");
      return static_cast<std::int32_t>(Status::Code::unsupported);
    }
    write(variant, variant_size, v->name);
    const Status s = run(*v, a);
    if (!s.ok()) write(message, message_size, s.reason);
    return static_cast<std::int32_t>(s.code);
  } catch (const std::exception& e) {
    write(message, message_size, e.what());
    return static_cast<std::int32_t>(Status::Code::launch_failed);
  }
}

}  // namespace

extern "C" RMSNORM_PLUGIN_EXPORT int32_t rmsnorm_c_forward(const rmsnorm_forward_args* c, int32_t memory, char* variant,
                                                           size_t variant_size, char* message, size_t message_size) {
  if (!c) {
    write(message, message_size, "null arguments");
    return RMSNORM_STATUS_INVALID_ARGUMENT;
  }
  const rmsnorm::ForwardArgs a = rmsnorm::from_abi(*c);
  return launch(a, memory, rmsnorm::pick_forward,
                [](const rmsnorm::Variant& v, const rmsnorm::ForwardArgs& x) { return v.run_forward(x); }, variant,
                variant_size, message, message_size);
}

extern "C" RMSNORM_PLUGIN_EXPORT int32_t rmsnorm_c_backward(const rmsnorm_backward_args* c, int32_t memory, char* variant,
                                                            size_t variant_size, char* message, size_t message_size) {
  if (!c) {
    write(message, message_size, "null arguments");
    return RMSNORM_STATUS_INVALID_ARGUMENT;
  }
  const rmsnorm::BackwardArgs a = rmsnorm::from_abi(*c);
  return launch(a, memory, rmsnorm::pick_backward,
                [](const rmsnorm::Variant& v, const rmsnorm::BackwardArgs& x) { return v.run_backward(x); }, variant,
                variant_size, message, message_size);
}

extern "C" RMSNORM_PLUGIN_EXPORT size_t rmsnorm_c_backward_workspace_bytes(int64_t rows, int64_t dim, int32_t memory) {
  try {
    return rmsnorm::backward_workspace_bytes(rows, dim, memory_of(memory));
  } catch (...) {
    return 0;
  }
}
