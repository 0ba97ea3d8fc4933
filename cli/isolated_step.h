// A certification step of a plugin kernel (its corpus replay, its generated cases of one op, or
// for a kernel hosted by another process one property) run in a child process (`_step ...`): a
// kernel that segfaults or leaves a sticky CUDA error fails that step, "crashed on case <repro
// line>", and the harness goes on with the next step in a fresh process.
//
// The child is this tool, which loads a plugin again through RMSNORM_PLUGINS; for a kernel a host
// process registered (Variant::in_process: the Python bridge) it is the command that host named
// in kLauncherEnv, which registers the kernel again and runs the same `_step` through
// include/rmsnorm/cert.h.
#pragma once

#include <cstdint>
#include <string>

#include "certification.h"
#include "commands.h"

namespace cert {

// Tab-separated argv of the command that starts a process hosting the in-process kernels of this
// one, to which `_step ...` is appended.
inline constexpr const char* kLauncherEnv = "RMSNORM_CERT_LAUNCHER";

// True when the variant's steps can run in child processes: a plugin, or an in-process kernel
// whose host named a launcher.
bool can_isolate(const rmsnorm::Variant& variant);

// Every property of an in-process variant (in_process_properties), each in a child process,
// `jobs` at a time.
SuiteRun isolated_suite(const rmsnorm::Variant& variant, std::int64_t cases, int jobs, Progress& progress);

CorpusRun isolated_corpus(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                          bool stop_at_first_failure);
OpRun isolated_generated_op(const rmsnorm::Variant& variant, rmsnorm::Op op, std::int64_t cases, std::uint64_t seed,
                            Progress& progress);

// The child's side: `_step corpus|generated|property ...`, results on stdout (not a user command).
int run_step(const Args& args);

}  // namespace cert
