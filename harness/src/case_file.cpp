// The case-file format (docs/case-format.md): parsing never trusts its input (every error is a
// message with its line), formatting writes every float as a hex float so that a case survives the
// round trip bit for bit.
#include "harness/case_file.h"

#include <boost/multiprecision/cpp_int.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "rmsnorm/formats.h"

namespace harness {
namespace {

using rmsnorm::Convention;
using rmsnorm::DType;
using rmsnorm::Op;
using rmsnorm::Quant;

// Limits that keep a hostile file from asking for unbounded memory.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 28;  // rows·dim of one tensor
constexpr std::int64_t kMaxRows = std::int64_t{1} << 40;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  const std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool parse_int(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_u64(const std::string& s, std::uint64_t& out) {
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

template <typename T>
bool parse_values(const std::string& s, std::vector<T>& out, std::string& why) {
  out.clear();
  std::string token;
  auto flush = [&]() -> bool {
    if (token.empty()) return true;
    double v = 0;
    if (!parse_float(token, v)) {
      why = "'" + token + "' is not a number";
      return false;
    }
    v = parse_decimal_once(token, v);
    if (static_cast<std::int64_t>(out.size()) >= kMaxElements) {
      why = "too many values";
      return false;
    }
    out.push_back(static_cast<T>(v));
    token.clear();
    return true;
  };
  for (char ch : s) {
    if (ch == ',' || ch == ' ' || ch == '\t') {
      if (!flush()) return false;
    } else {
      token.push_back(ch);
    }
  }
  return flush();
}

template <typename T>
std::string join_values(const std::vector<T>& v, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += hex_float(static_cast<double>(v[i]));
  }
  return out;
}

std::string join_decimal(const std::vector<double>& v, const char* sep) {
  std::string out;
  char buf[64];
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    std::snprintf(buf, sizeof buf, "%.17g", v[i]);
    out += buf;
  }
  return out;
}

bool is_activation(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// The key/value pairs of a case in their canonical order (shared by both text forms).
std::vector<std::pair<std::string, std::string>> entries_of(const Case& c, const char* list_sep) {
  std::vector<std::pair<std::string, std::string>> e;
  e.emplace_back("op", rmsnorm::to_string(c.op));
  e.emplace_back("variant", c.variant);
  if (!c.property.empty()) e.emplace_back("property", c.property);
  for (const auto& kv : c.property_params) e.emplace_back("property." + kv.first, kv.second);
  e.emplace_back("rows", std::to_string(c.rows));
  e.emplace_back("dim", std::to_string(c.dim));
  e.emplace_back("x_type", rmsnorm::to_string(c.x_type));
  e.emplace_back("g_type", rmsnorm::to_string(c.g_type));
  if (c.is_forward()) e.emplace_back("y_type", rmsnorm::to_string(c.y_type));
  if (!c.is_forward()) e.emplace_back("dg_type", rmsnorm::to_string(c.dg_type));
  e.emplace_back("convention", rmsnorm::to_string(c.convention));
  if (c.has_quant()) e.emplace_back("quant", rmsnorm::to_string(c.quant));
  e.emplace_back("eps", hex_float(c.eps));
  if (c.has_quant() && c.quant == Quant::static_scale) e.emplace_back("static_scale", hex_float(c.static_scale));
  const std::string layout = c.layout.to_string();
  if (!layout.empty()) e.emplace_back("layout", layout);
  if (!c.generator.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(c.seed));
    e.emplace_back("generator", c.generator);
    e.emplace_back("seed", buf);
    e.emplace_back("x.regime", c.x_regime);
    if (c.has_add() && c.is_forward()) e.emplace_back("o.regime", c.o_regime);
    e.emplace_back("g.regime", c.g_regime);
    if (!c.is_forward()) e.emplace_back("dy.regime", c.dy_regime);
  }
  const struct { const char* key; const std::vector<float>* v; } lists[] = {
      {"x", &c.x}, {"o", &c.o}, {"g", &c.g}, {"dy", &c.dy}, {"dresidual", &c.dresidual}, {"rstd", &c.rstd}};
  for (const auto& l : lists)
    if (!l.v->empty()) e.emplace_back(l.key, join_values(*l.v, list_sep));
  const struct { const char* key; const std::vector<double>* v; } expects[] = {
      {"expect.y", &c.expect_y}, {"expect.dx", &c.expect_dx}, {"expect.dg", &c.expect_dg},
      {"expect.rstd", &c.expect_rstd}};
  bool any_expect = false;
  for (const auto& l : expects)
    if (!l.v->empty()) {
      e.emplace_back(l.key, join_decimal(*l.v, list_sep));
      any_expect = true;
    }
  if (any_expect) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", c.expect_tol);
    e.emplace_back("expect.tol", buf);
  }
  if (!c.note.empty()) {
    std::string note = c.note;
    for (char& ch : note)
      if (ch == ';' || ch == '#' || ch == '\n' || ch == '\r') ch = ',';
    e.emplace_back("note", note);
  }
  return e;
}

// Semantic checks once every key is read; `set` holds the keys the text gave.
std::string check_case(Case& c, const std::set<std::string>& set) {
  if (c.rows < 0 || c.rows > kMaxRows) return "rows must be in [0, 2^40]";
  if (c.dim < 1 || c.dim > kMaxDim) return "dim must be in [1, 2^31]";
  if (c.rows > 0 && c.dim > kMaxElements / c.rows) return "rows·dim exceeds 2^28 elements";
  if (!is_activation(c.x_type)) return "x_type must be f32, f16 or bf16";
  if (!set.count("g_type")) c.g_type = c.x_type;
  if (c.g_type != c.x_type && c.g_type != DType::f32) return "g_type must be x_type or f32";
  if (c.has_quant()) {
    if (!set.count("quant")) c.quant = Quant::dynamic_token;
    if (!set.count("y_type")) c.y_type = DType::e4m3;
    if (c.quant == Quant::none) return "a quant op needs quant = static, dynamic_token or per_block";
    if (!rmsnorm::is_fp8(c.y_type)) return "a quant op needs y_type e4m3 or e5m2";
    if (c.convention == Convention::llama) return "the llama convention rounds y to the input type: no FP8 output";
  } else {
    if (set.count("quant") && c.quant != Quant::none) return "quant is only for forward_quant/add_forward_quant";
    c.quant = Quant::none;
    if (!set.count("y_type")) c.y_type = c.x_type;
    if (c.is_forward() && c.y_type != c.x_type) return "y_type must equal x_type without quantization";
  }
  if (c.dg_type != DType::f32 && c.dg_type != c.g_type) return "dg_type must be f32 or g_type";
  if (!(c.eps >= 0.0f) || std::isinf(c.eps)) return "eps must be finite and >= 0";
  if (!std::isfinite(c.static_scale) || !(c.static_scale > 0.0f)) return "static_scale must be finite and > 0";
  if (!(c.expect_tol >= 0.0)) return "expect.tol must be >= 0";

  const std::int64_t n = c.rows * c.dim;
  const bool explicit_values = !c.x.empty() || !c.g.empty() || !c.o.empty() || !c.dy.empty() || !c.dresidual.empty();
  if (!c.generator.empty() && explicit_values) return "give either generator + seed or explicit values, not both";
  if (c.generator.empty()) {
    auto size_is = [](const std::vector<float>& v, std::int64_t want, const char* name) -> std::string {
      if (static_cast<std::int64_t>(v.size()) == want) return "";
      return std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want);
    };
    std::string why;
    if (!(why = size_is(c.x, n, "x")).empty()) return why;
    if (c.convention != Convention::no_weight && !(why = size_is(c.g, c.dim, "g")).empty()) return why;
    if (c.convention == Convention::no_weight && !c.g.empty() && !(why = size_is(c.g, c.dim, "g")).empty()) return why;
    if (c.has_add() && c.is_forward() && !(why = size_is(c.o, n, "o")).empty()) return why;
    if (!c.is_forward() && !(why = size_is(c.dy, n, "dy")).empty()) return why;
    if (c.op == Op::add_backward && !(why = size_is(c.dresidual, n, "dresidual")).empty()) return why;
    if (!(c.has_add() && c.is_forward()) && !c.o.empty()) return "o is only for add_forward ops";
    if (c.is_forward() && !c.dy.empty()) return "dy is only for backward ops";
    if (c.op != Op::add_backward && !c.dresidual.empty()) return "dresidual is only for add_backward";
  } else if (!set.count("seed")) {
    return "generator needs a seed";
  }
  if (!c.rstd.empty() && static_cast<std::int64_t>(c.rstd.size()) != c.rows) return "rstd needs one value per row";
  if (!c.expect_y.empty() && static_cast<std::int64_t>(c.expect_y.size()) != n) return "expect.y needs rows·dim values";
  if (!c.expect_dx.empty() && static_cast<std::int64_t>(c.expect_dx.size()) != n) return "expect.dx needs rows·dim values";
  if (!c.expect_dg.empty() && static_cast<std::int64_t>(c.expect_dg.size()) != c.dim) return "expect.dg needs dim values";
  if (!c.expect_rstd.empty() && static_cast<std::int64_t>(c.expect_rstd.size()) != c.rows) return "expect.rstd needs rows values";
  if (c.is_forward() && (!c.expect_dx.empty() || !c.expect_dg.empty())) return "expect.dx/expect.dg need a backward op";
  if (!c.is_forward() && !c.expect_y.empty()) return "expect.y needs a forward op";
  return "";
}

}  // namespace

std::string hex_float(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

bool parse_float(const std::string& s, double& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') return false;
  // ERANGE on underflow still yields the correctly rounded subnormal/zero: accept it; overflow
  // to ±HUGE_VAL is only accepted when the text says inf.
  if (errno == ERANGE && std::isinf(v) && s.find("inf") == std::string::npos) return false;
  out = v;
  return true;
}

namespace {

// The sign of (decimal text − d), decided exactly: 0 when the text is not a plain decimal
// ([+-]digits[.digits][e[+-]digits]) or equals d. d is finite and non-zero.
int decimal_minus(const std::string& text, double d) {
  using boost::multiprecision::cpp_int;
  std::size_t i = 0;
  const bool negative = text[i] == '-';
  if (text[i] == '+' || text[i] == '-') ++i;
  cpp_int digits = 0;
  long long exp10 = 0;
  bool any = false, point = false;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (point) return 0;
      point = true;
      continue;
    }
    digits = digits * 10 + (text[i] - '0');
    if (point) --exp10;
    any = true;
  }
  if (!any) return 0;
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') return 0;
    char* end = nullptr;
    const long long e = std::strtoll(text.c_str() + i + 1, &end, 10);
    if (*end != '\0' || e > 100000 || e < -100000) return 0;
    exp10 += e;
  }
  if ((d < 0) != negative) return 0;
  // |d| = m·2^e2 with an integer m.
  int e2 = 0;
  const double frac = std::frexp(std::fabs(d), &e2);
  const auto m = static_cast<std::uint64_t>(std::ldexp(frac, 53));
  e2 -= 53;
  cpp_int lhs = digits, rhs = m;
  if (exp10 >= 0) lhs *= boost::multiprecision::pow(cpp_int(10), static_cast<unsigned>(exp10));
  else rhs *= boost::multiprecision::pow(cpp_int(10), static_cast<unsigned>(-exp10));
  if (e2 >= 0) rhs <<= e2;
  else lhs <<= -e2;
  const int sign = lhs > rhs ? 1 : lhs < rhs ? -1 : 0;
  return negative ? -sign : sign;
}

}  // namespace

double parse_decimal_once(const std::string& text, double d) {
  // strtod rounds the text to 53 bits. A later rounding to a narrower type can then go wrong
  // only when that double is itself one of the narrower type's rounding boundaries (a value
  // or a midpoint of a format of at most 24 bits has 28 trailing zero bits of its 53). There
  // the text decides: move d one double ulp towards it, which puts it strictly on the text's
  // side of the boundary and on no other boundary.
  if (!std::isfinite(d) || d == 0) return d;
  int e2 = 0;
  const auto m = static_cast<std::uint64_t>(std::ldexp(std::frexp(std::fabs(d), &e2), 53));
  if (m % (std::uint64_t{1} << 28) != 0) return d;
  const int side = decimal_minus(text, d);
  return side == 0 ? d : std::nextafter(d, side > 0 ? INFINITY : -INFINITY);
}

bool parse_case(const std::string& text, Case& out, std::string& error) {
  Case c;
  std::set<std::string> seen;
  struct List { std::string key; std::vector<double> values; };
  std::vector<List> lists;
  // A ';'-joined failure line reports entries; a file reports lines.
  const bool single_line = trim(text).find('\n') == std::string::npos && text.find(';') != std::string::npos;
  std::istringstream in(text);
  std::string line;
  int line_no = 0, entry_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::size_t start = 0;
    while (start <= line.size()) {
      std::size_t semi = line.find(';', start);
      if (semi == std::string::npos) semi = line.size();
      const std::string entry = trim(line.substr(start, semi - start));
      start = semi + 1;
      if (entry.empty()) continue;
      ++entry_no;
      const std::string where = single_line ? "entry " + std::to_string(entry_no) : "line " + std::to_string(line_no);
      auto fail = [&](const std::string& why) {
        error = where + ": " + why;
        return false;
      };
      const std::size_t eq = entry.find('=');
      if (eq == std::string::npos) return fail("expected 'key = value', got '" + entry + "'");
      const std::string key = trim(entry.substr(0, eq));
      const std::string value = trim(entry.substr(eq + 1));
      if (key.empty()) return fail("missing key before '='");
      if (!seen.insert(key).second) return fail("duplicate key '" + key + "'");
      std::string why;
      std::int64_t iv = 0;
      double dv = 0;
      if (key == "op") {
        if (!rmsnorm::parse(value, c.op)) return fail("unknown op '" + value + "'");
      } else if (key == "variant") {
        if (value.empty()) return fail("variant pattern is empty");
        c.variant = value;
      } else if (key == "rows" || key == "dim") {
        if (!parse_int(value, iv)) return fail(key + " '" + value + "' is not an integer");
        (key == "rows" ? c.rows : c.dim) = iv;
      } else if (key == "x_type" || key == "g_type" || key == "y_type" || key == "dg_type") {
        DType t;
        if (!rmsnorm::parse(value, t)) return fail("unknown type '" + value + "'");
        (key == "x_type" ? c.x_type : key == "g_type" ? c.g_type : key == "y_type" ? c.y_type : c.dg_type) = t;
      } else if (key == "convention") {
        if (!rmsnorm::parse(value, c.convention)) return fail("unknown convention '" + value + "'");
      } else if (key == "quant") {
        if (!rmsnorm::parse(value, c.quant)) return fail("unknown quant '" + value + "'");
      } else if (key == "eps" || key == "static_scale") {
        if (!parse_float(value, dv)) return fail(key + " '" + value + "' is not a number");
        (key == "eps" ? c.eps : c.static_scale) = static_cast<float>(dv);
      } else if (key == "layout") {
        if (!Layout::parse(value, c.layout, why)) return fail("layout: " + why);
      } else if (key == "generator") {
        if (value.empty()) return fail("generator name is empty");
        c.generator = value;
      } else if (key == "seed") {
        if (!parse_u64(value, c.seed)) return fail("seed '" + value + "' is not a 64-bit unsigned integer");
      } else if (key == "x.regime" || key == "o.regime" || key == "g.regime" || key == "dy.regime") {
        if (value.empty()) return fail(key + " is empty");
        (key == "x.regime" ? c.x_regime : key == "o.regime" ? c.o_regime : key == "g.regime" ? c.g_regime : c.dy_regime) = value;
      } else if (key == "x" || key == "o" || key == "g" || key == "dy" || key == "dresidual" || key == "rstd") {
        // Rounded straight to the tensor's type once the types are known (after every key).
        std::vector<double> v;
        if (!parse_values(value, v, why)) return fail(key + ": " + why);
        lists.push_back({key, std::move(v)});
      } else if (key == "expect.y" || key == "expect.dx" || key == "expect.dg" || key == "expect.rstd") {
        std::vector<double>& v = key == "expect.y" ? c.expect_y : key == "expect.dx" ? c.expect_dx
                                 : key == "expect.dg" ? c.expect_dg : c.expect_rstd;
        if (!parse_values(value, v, why)) return fail(key + ": " + why);
      } else if (key == "expect.tol") {
        if (!parse_float(value, c.expect_tol)) return fail("expect.tol '" + value + "' is not a number");
      } else if (key == "property") {
        c.property = value;
      } else if (key.compare(0, 9, "property.") == 0 && key.size() > 9) {
        c.property_params[key.substr(9)] = value;
      } else if (key == "note") {
        c.note = value;
      } else {
        return fail("unknown key '" + key + "'");
      }
    }
  }
  if (entry_no == 0) {
    error = "the case is empty: no 'key = value' entry (docs/case-format.md)";
    return false;
  }
  // Each value rounded once, from the text, to its tensor's type (rstd is fp32).
  for (List& l : lists) {
    std::vector<float>& v = l.key == "x" ? c.x : l.key == "o" ? c.o : l.key == "g" ? c.g : l.key == "dy" ? c.dy
                            : l.key == "dresidual" ? c.dresidual : c.rstd;
    const DType t = l.key == "g" ? c.g_type : l.key == "rstd" ? DType::f32 : c.x_type;
    v.resize(l.values.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(rmsnorm::round_to(l.values[i], t));
  }
  const std::string why = check_case(c, seen);
  if (!why.empty()) {
    error = "case: " + why;
    return false;
  }
  out = std::move(c);
  error.clear();
  return true;
}

std::string format_case(const Case& c) {
  std::string out;
  for (const auto& kv : entries_of(c, " ")) out += kv.first + " = " + kv.second + "\n";
  return out;
}

std::string one_line(const Case& c) {
  std::string out;
  for (const auto& kv : entries_of(c, ",")) {
    if (!out.empty()) out += ';';
    out += kv.first + "=" + kv.second;
  }
  return out;
}

bool materialize(const Case& c, CaseValues& out, std::string& error) {
  out = CaseValues{};
  if (!c.generator.empty()) return generate_values(c, out, error);
  auto rounded = [](const std::vector<float>& in, DType t) {
    std::vector<float> v(in.size());
    const auto n = static_cast<std::int64_t>(in.size());
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 16))
    for (std::int64_t i = 0; i < n; ++i)
      v[static_cast<std::size_t>(i)] = static_cast<float>(rmsnorm::round_to(in[static_cast<std::size_t>(i)], t));
    return v;
  };
  out.x = rounded(c.x, c.x_type);
  out.o = rounded(c.o, c.x_type);
  out.g = rounded(c.g, c.g_type);
  out.dy = rounded(c.dy, c.x_type);
  out.dresidual = rounded(c.dresidual, c.x_type);
  out.rstd = c.rstd;
  error.clear();
  return true;
}

oracle::ForwardCase forward_shape(const Case& c) {
  oracle::ForwardCase f;
  f.rows = c.rows;
  f.dim = c.dim;
  f.x_type = c.x_type;
  f.g_type = c.g_type;
  f.y_type = c.y_type;
  f.convention = c.convention;
  f.quant = c.has_quant() ? c.quant : Quant::none;
  f.eps = c.eps;
  f.static_scale = c.static_scale;
  return f;
}

bool forward_case(const Case& c, oracle::ForwardCase& out, std::string& error) {
  if (!c.is_forward()) {
    error = std::string("op ") + rmsnorm::to_string(c.op) + " is not a forward op";
    return false;
  }
  CaseValues v;
  if (!materialize(c, v, error)) return false;
  oracle::ForwardCase f = forward_shape(c);
  f.x = std::move(v.x);
  if (c.has_add()) f.o = std::move(v.o);
  if (c.convention != Convention::no_weight) f.g = std::move(v.g);
  error = oracle::validate(f);
  if (!error.empty()) return false;
  out = std::move(f);
  return true;
}

bool backward_case(const Case& c, oracle::BackwardCase& out, std::string& error) {
  if (c.is_forward()) {
    error = std::string("op ") + rmsnorm::to_string(c.op) + " is not a backward op";
    return false;
  }
  CaseValues v;
  if (!materialize(c, v, error)) return false;
  oracle::BackwardCase b;
  b.rows = c.rows;
  b.dim = c.dim;
  b.x_type = c.x_type;
  b.g_type = c.g_type;
  b.dg_type = c.dg_type;
  b.convention = c.convention;
  b.eps = c.eps;
  b.x = std::move(v.x);
  b.dy = std::move(v.dy);
  if (c.convention != Convention::no_weight) b.g = std::move(v.g);
  b.rstd = std::move(v.rstd);
  if (c.op == Op::add_backward) b.dresidual = std::move(v.dresidual);
  if (b.rstd.empty() && b.rows > 0) {
    // The backward is handed the forward's r: RN32 of the exact r, as a perfect forward writes it.
    const oracle::ForwardCase f = oracle::forward_of(b);
    error = oracle::validate(f);
    if (!error.empty()) return false;
    b.rstd = oracle::rstd_rounded(f);
  }
  error = oracle::validate(b);
  if (!error.empty()) return false;
  out = std::move(b);
  return true;
}

}  // namespace harness
