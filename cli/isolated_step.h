// A certification step of a plugin kernel (its corpus replay, or its generated cases of one op)
// run in a child process of this tool (`rmsnorm-cert _step ...`): a kernel that segfaults or
// leaves a sticky CUDA error fails that step, "crashed on case <repro line>", and the harness
// goes on with the next step in a fresh process.
#pragma once

#include <cstdint>
#include <string>

#include "certification.h"
#include "commands.h"

namespace cert {

CorpusRun isolated_corpus(const rmsnorm::Variant& variant, const std::string& dir, Progress& progress,
                          bool stop_at_first_failure);
OpRun isolated_generated_op(const rmsnorm::Variant& variant, rmsnorm::Op op, std::int64_t cases, std::uint64_t seed,
                            Progress& progress);

// The child's side: `_step corpus|generated ...`, results on stdout (not a user command).
int run_step(const Args& args);

}  // namespace cert
