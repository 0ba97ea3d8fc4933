/* The certification tool as a C library (librmsnorm_cert.so), for a process that hosts its own
 * kernels: the Python bridge (python/rmsnorm_cert) builds a plugin table (plugin.h) whose entry
 * points call back into Python, registers it here, and runs rmsnorm-cert's commands in-process.
 *
 * Kernels registered this way are certified like a --plugin library's, with one difference: no
 * child process can load them, so the property suite, the corpus and the generated cases all
 * run in the calling process, one case after another. */
#ifndef RMSNORM_CERT_H
#define RMSNORM_CERT_H

#include <stddef.h>

#include "rmsnorm/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the kernels of `table` as plugin.<table name>.<kernel>, with the table's rules.
 * `origin` is the command that registers them again from a shell: repro lines are
 * `<origin> --line '...'`. The table must outlive the process's use of it. Only before the first
 * rmsnorm_cert_main. Returns 0, or non-zero with the reason in `error`. */
int rmsnorm_cert_register(const rmsnorm_plugin* table, const char* origin, char* error, size_t error_size);

/* rmsnorm-cert's command line: argv[0] is the program's name, argv[1] the command. Returns the
 * exit status the tool would (0 good, 1 a check failed, 2 bad arguments, 3 could not run). */
int rmsnorm_cert_main(int argc, const char* const* argv);

#ifdef __cplusplus
}
#endif

#endif /* RMSNORM_CERT_H */
