#include "command_line.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace cert {

bool parse_u64(const std::string& s, std::uint64_t& out) {
  if (s.empty() || s[0] == '-' || s[0] == '+' || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  out = v;
  return true;
}

bool parse_i64(const std::string& s, std::int64_t& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  out = v;
  return true;
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (errno == ERANGE && v != 0) return false;  // overflow; underflow to subnormal is fine
  out = v;
  return true;
}

CommandLine::CommandLine(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

void CommandLine::option(const std::string& name, std::string* target, const std::string& meta,
                         const std::string& help) {
  options_.push_back({name, meta, help, Option::Kind::text, target});
}
void CommandLine::option(const std::string& name, std::int64_t* target, const std::string& meta,
                         const std::string& help, std::int64_t min_value, std::int64_t max_value) {
  Option o{name, meta, help, Option::Kind::integer, target};
  o.min_value = min_value;
  o.max_value = max_value;
  options_.push_back(o);
}
void CommandLine::option(const std::string& name, double* target, const std::string& meta, const std::string& help) {
  options_.push_back({name, meta, help, Option::Kind::real, target});
}
void CommandLine::option_u64(const std::string& name, std::uint64_t* target, const std::string& meta,
                             const std::string& help) {
  options_.push_back({name, meta, help, Option::Kind::u64, target});
}
void CommandLine::flag(const std::string& name, bool* target, const std::string& help) {
  options_.push_back({name, "", help, Option::Kind::flag, target});
}
void CommandLine::repeated(const std::string& name, std::vector<std::string>* target, const std::string& meta,
                           const std::string& help) {
  options_.push_back({name, meta, help, Option::Kind::repeated, target});
}
void CommandLine::positionals(std::vector<std::string>* target, const std::string& meta, std::size_t min_count,
                              std::size_t max_count) {
  positionals_ = target;
  positional_meta_ = meta;
  min_positionals_ = min_count;
  max_positionals_ = max_count;
}

bool CommandLine::given(const std::string& name) const {
  for (const auto& g : given_)
    if (g == name) return true;
  return false;
}

bool CommandLine::parse(const std::vector<std::string>& args, std::string& error) {
  std::size_t npos = 0;
  bool only_positionals = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (!only_positionals && (a == "--help" || a == "-h")) {
      help_ = true;
      return false;
    }
    if (!only_positionals && a == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string value;
      bool has_value = false;
      const std::size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      }
      const Option* opt = nullptr;
      for (const Option& o : options_)
        if (o.name == a) opt = &o;
      if (!opt) {
        error = "unknown option '" + a + "' for '" + command_ + "'";
        return false;
      }
      given_.push_back(a);
      if (opt->kind == Option::Kind::flag) {
        if (has_value) {
          error = "option " + a + " takes no value";
          return false;
        }
        *static_cast<bool*>(opt->target) = true;
        continue;
      }
      if (!has_value) {
        if (i + 1 >= args.size()) {
          error = "option " + a + " needs a value (" + opt->meta + ")";
          return false;
        }
        value = args[++i];
      }
      switch (opt->kind) {
        case Option::Kind::text: *static_cast<std::string*>(opt->target) = value; break;
        case Option::Kind::repeated: static_cast<std::vector<std::string>*>(opt->target)->push_back(value); break;
        case Option::Kind::integer: {
          std::int64_t v = 0;
          if (!parse_i64(value, v) || v < opt->min_value || v > opt->max_value) {
            error = "option " + a + " wants an integer in [" + std::to_string(opt->min_value) + ", " +
                    std::to_string(opt->max_value) + "], got '" + value + "'";
            return false;
          }
          *static_cast<std::int64_t*>(opt->target) = v;
          break;
        }
        case Option::Kind::u64: {
          std::uint64_t v = 0;
          if (!parse_u64(value, v)) {
            error = "option " + a + " wants an unsigned 64-bit number (decimal or 0x...), got '" + value + "'";
            return false;
          }
          *static_cast<std::uint64_t*>(opt->target) = v;
          break;
        }
        case Option::Kind::real: {
          double v = 0;
          if (!parse_double(value, v)) {
            error = "option " + a + " wants a number, got '" + value + "'";
            return false;
          }
          *static_cast<double*>(opt->target) = v;
          break;
        }
        case Option::Kind::flag: break;
      }
      continue;
    }
    if (!positionals_ || npos >= max_positionals_) {
      error = "unexpected argument '" + a + "' for '" + command_ + "'";
      return false;
    }
    positionals_->push_back(a);
    ++npos;
  }
  if (npos < min_positionals_) {
    error = "'" + command_ + "' needs " + positional_meta_;
    return false;
  }
  return true;
}

std::string CommandLine::help() const {
  std::ostringstream s;
  s << "usage: rmsnorm-cert " << synopsis_ << "\n\n" << description_ << "\n";
  if (!options_.empty()) s << "\noptions:\n";
  for (const Option& o : options_) {
    std::string left = "  " + o.name + (o.meta.empty() ? "" : " " + o.meta);
    if (left.size() < 28) left.append(28 - left.size(), ' ');
    else left += "\n" + std::string(28, ' ');
    s << left << o.help << "\n";
  }
  s << "  --help                    this text\n";
  return s.str();
}

int CommandLine::usage_exit(const std::string& error) const {
  if (help_) {
    std::fputs(help().c_str(), stdout);
    return kExitOk;
  }
  std::fprintf(stderr, "rmsnorm-cert %s: %s\nusage: rmsnorm-cert %s   (see rmsnorm-cert %s --help)\n", command_.c_str(),
               error.c_str(), synopsis_.c_str(), command_.c_str());
  return kExitUsage;
}

}  // namespace cert
