// rmsnorm-cert: the command line of the verification harness (entry.cpp).
#include "commands.h"

int main(int argc, char** argv) { return cert::run_command_line(argc, argv); }
