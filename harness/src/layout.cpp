// Layout's text form: space-separated `key=value` tokens, only the non-default ones, so a dense
// aligned layout is the empty string. Used by case files and failure lines.
#include <cerrno>
#include <cstdlib>

#include "harness/run.h"

namespace harness {
namespace {

struct Field {
  const char* name;
  std::int64_t Layout::*member;
  bool is_offset;
};

constexpr Field kFields[] = {
    {"x_pad", &Layout::x_pad, false},         {"o_pad", &Layout::o_pad, false},
    {"y_pad", &Layout::y_pad, false},         {"dy_pad", &Layout::dy_pad, false},
    {"dx_pad", &Layout::dx_pad, false},       {"dres_pad", &Layout::dres_pad, false},
    {"x_offset", &Layout::x_offset, true},    {"o_offset", &Layout::o_offset, true},
    {"y_offset", &Layout::y_offset, true},    {"g_offset", &Layout::g_offset, true},
    {"dy_offset", &Layout::dy_offset, true},  {"dx_offset", &Layout::dx_offset, true},
    {"dres_offset", &Layout::dres_offset, true},
};

// A pad is extra elements per row; 2^34 covers the 64-bit-offset cases (R·stride > 2^31).
constexpr std::int64_t kMaxPad = std::int64_t{1} << 34;

}  // namespace

std::string Layout::to_string() const {
  std::string out;
  for (const Field& f : kFields) {
    const std::int64_t v = this->*(f.member);
    if (v == 0) continue;
    if (!out.empty()) out += ' ';
    out += std::string(f.name) + "=" + std::to_string(v);
  }
  if (in_place) out += std::string(out.empty() ? "" : " ") + "in_place=1";
  return out;
}

bool Layout::parse(const std::string& s, Layout& out, std::string& error) {
  Layout l;
  std::string token;
  std::size_t i = 0;
  auto next_token = [&]() {
    token.clear();
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == ',')) ++i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != ',') token.push_back(s[i++]);
    return !token.empty();
  };
  while (next_token()) {
    if (token == "default" || token == "dense") continue;
    const std::size_t eq = token.find('=');
    if (eq == std::string::npos) {
      error = "expected key=value, got '" + token + "'";
      return false;
    }
    const std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    errno = 0;
    char* end = nullptr;
    const long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 0);
    if (value.empty() || errno != 0 || *end != '\0') {
      error = key + ": '" + value + "' is not an integer";
      return false;
    }
    if (key == "in_place") {
      if (v != 0 && v != 1) {
        error = "in_place must be 0 or 1";
        return false;
      }
      l.in_place = v == 1;
      continue;
    }
    const Field* field = nullptr;
    for (const Field& f : kFields)
      if (key == f.name) field = &f;
    if (!field) {
      error = "unknown layout key '" + key + "'";
      return false;
    }
    // Offsets are bytes past a 256-byte boundary, inside the guard band's granularity.
    if (field->is_offset && (v < 0 || v >= 256)) {
      error = key + " must be in [0, 256) bytes";
      return false;
    }
    if (!field->is_offset && (v < 0 || v > kMaxPad)) {
      error = key + " must be in [0, 2^34] elements";
      return false;
    }
    l.*(field->member) = v;
  }
  out = l;
  error.clear();
  return true;
}

}  // namespace harness
