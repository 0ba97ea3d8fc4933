// The subcommands of rmsnorm-cert, one source file each; every one takes the arguments after
// its name and returns the process exit status (command_line.h: kExitOk/Failed/Usage/Error).
#pragma once

#include <string>
#include <vector>

namespace cert {

using Args = std::vector<std::string>;

int run_list(const Args& args);
int run_replay(const Args& args);
int run_repro(const Args& args);
int run_fuzz(const Args& args);
int run_certify(const Args& args);
int run_mutants(const Args& args);
int run_bench(const Args& args);
int run_examples(const Args& args);
int run_lab(const Args& args);
int run_time(const Args& args);

// The whole command line: argv[1] names the command (argv[0] is the program). entry.cpp.
int run_command_line(int argc, const char* const* argv);

// The directory holding the corpus of this source tree (RMSNORM_CORPUS overrides).
std::string default_corpus_dir();

}  // namespace cert
