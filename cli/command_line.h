// Parsing one subcommand's arguments: declared options with help text, strict number parsing,
// and a clear message (never an exception escaping, never a crash) for anything unexpected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cert {

// Exit statuses of every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // a check failed (a case, a property, a surviving mutant)
inline constexpr int kExitUsage = 2;   // bad arguments or a bad case file
inline constexpr int kExitError = 3;   // something could not be run (missing file, I/O)

class CommandLine {
 public:
  CommandLine(std::string command, std::string synopsis, std::string description);

  // Declare options before parse(). `meta` names the value in the help ("N", "PATTERN").
  void option(const std::string& name, std::string* target, const std::string& meta, const std::string& help);
  void option(const std::string& name, std::int64_t* target, const std::string& meta, const std::string& help,
              std::int64_t min_value, std::int64_t max_value);
  void option(const std::string& name, double* target, const std::string& meta, const std::string& help);
  void option_u64(const std::string& name, std::uint64_t* target, const std::string& meta, const std::string& help);
  void flag(const std::string& name, bool* target, const std::string& help);
  // Options that may repeat, values collected in order (e.g. --set D=7).
  void repeated(const std::string& name, std::vector<std::string>* target, const std::string& meta,
                const std::string& help);
  void positionals(std::vector<std::string>* target, const std::string& meta, std::size_t min_count,
                   std::size_t max_count);

  // Parses args (after the subcommand). Returns false with `error` set, or with help_requested().
  bool parse(const std::vector<std::string>& args, std::string& error);
  bool help_requested() const { return help_; }
  std::string help() const;
  // Print the error and the usage line to stderr; returns kExitUsage (or kExitOk for --help).
  int usage_exit(const std::string& error) const;
  bool given(const std::string& name) const;

 private:
  struct Option {
    std::string name, meta, help;
    enum class Kind { text, integer, real, u64, flag, repeated } kind;
    void* target;
    std::int64_t min_value = 0, max_value = 0;
  };
  std::string command_, synopsis_, description_;
  std::vector<Option> options_;
  std::vector<std::string>* positionals_ = nullptr;
  std::string positional_meta_;
  std::size_t min_positionals_ = 0, max_positionals_ = 0;
  std::vector<std::string> given_;
  bool help_ = false;
};

// Strict conversions: the whole string must be a number of the right kind.
bool parse_u64(const std::string& s, std::uint64_t& out);  // decimal or 0x hex
bool parse_i64(const std::string& s, std::int64_t& out);
bool parse_double(const std::string& s, double& out);      // decimal, hex floats, inf, nan

}  // namespace cert
