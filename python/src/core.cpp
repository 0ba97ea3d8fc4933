// rmsnorm_cert_core: the oracle and the judge on numpy arrays (the Python package rmsnorm_cert
// wraps it). A case is built from arrays, rounded once to its types; exact() gives, per output
// element, the exact value, its correct rounding and the accepted interval; judge() gives the
// verdict on a kernel's outputs with the worst elements and the one-line repro.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "harness/case_file.h"
#include "oracle/oracle.h"
#include "rmsnorm/formats.h"

namespace py = pybind11;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;
using rmsnorm::DType;

template <typename T>
T parse_or_throw(const std::string& s, const char* what) {
  T out{};
  if (!rmsnorm::parse(s, out)) throw py::value_error(std::string("unknown ") + what + " '" + s + "'");
  return out;
}

// Values of `a` rounded once (RN, ties to even) to t: every input type holds exactly in a float.
std::vector<float> rounded(const Array& a, DType t) {
  std::vector<float> out(static_cast<std::size_t>(a.size()));
  const double* p = a.data();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(rmsnorm::round_to(p[i], t));
  return out;
}

// [rows, dim] from a 1-D (one row) or 2-D array.
void shape_of(const Array& x, std::int64_t& rows, std::int64_t& dim) {
  if (x.ndim() == 1) rows = 1, dim = x.shape(0);
  else if (x.ndim() == 2) rows = x.shape(0), dim = x.shape(1);
  else throw py::value_error("x must be 1-D (one row) or 2-D [rows, dim]");
  if (dim < 1) throw py::value_error("x needs at least one column");
}

void expect_size(const char* name, const std::optional<Array>& a, std::int64_t n) {
  if (a && a->size() != n)
    throw py::value_error(std::string(name) + " has " + std::to_string(a->size()) + " values, expected " + std::to_string(n));
}

harness::Case make_case(const std::string& op, const Array& x, const std::optional<Array>& g, double eps, const std::string& x_type,
                        const std::string& g_type, const std::string& y_type, const std::string& convention,
                        const std::string& quant, double static_scale, const std::optional<Array>& o,
                        const std::optional<Array>& dy, const std::optional<Array>& dresidual, const std::optional<Array>& rstd,
                        const std::string& dg_type) {
  harness::Case c;
  c.variant = "python";
  c.op = parse_or_throw<rmsnorm::Op>(op, "op");
  shape_of(x, c.rows, c.dim);
  c.x_type = parse_or_throw<DType>(x_type, "type");
  c.g_type = g_type.empty() ? c.x_type : parse_or_throw<DType>(g_type, "type");
  c.convention = parse_or_throw<rmsnorm::Convention>(convention, "convention");
  c.quant = parse_or_throw<rmsnorm::Quant>(quant, "quant mode");
  c.y_type = y_type.empty() ? (c.has_quant() ? DType::e4m3 : c.x_type) : parse_or_throw<DType>(y_type, "type");
  c.dg_type = parse_or_throw<DType>(dg_type, "type");
  if (!(eps >= 0) || !std::isfinite(eps)) throw py::value_error("eps must be finite and >= 0");
  c.eps = static_cast<float>(eps);
  c.static_scale = static_cast<float>(static_scale);
  const std::int64_t n = c.rows * c.dim;
  expect_size("g", g, c.dim);
  expect_size("o", o, n);
  expect_size("dy", dy, n);
  expect_size("dresidual", dresidual, n);
  expect_size("rstd", rstd, c.rows);
  c.x = rounded(x, c.x_type);
  if (g) c.g = rounded(*g, c.g_type);
  if (o) c.o = rounded(*o, c.x_type);
  if (dy) c.dy = rounded(*dy, c.x_type);
  if (dresidual) c.dresidual = rounded(*dresidual, c.x_type);
  if (rstd) c.rstd = rounded(*rstd, DType::f32);
  if (c.has_add() && c.o.empty() && c.is_forward()) throw py::value_error(op + " needs o");
  if (!c.is_forward() && c.dy.empty()) throw py::value_error(op + " needs dy");
  if (c.op == rmsnorm::Op::add_backward && c.dresidual.empty()) throw py::value_error("add_backward needs dresidual");
  if (c.convention != rmsnorm::Convention::no_weight && c.g.empty()) throw py::value_error("g is required unless convention is no_weight");
  return c;
}

// The shape the judge assumes for a reduction nobody declared: every term summed in one chain
// (docs/contract.md#accumulation-shape); or the caller's (terms per thread, tree depth).
rmsnorm::AccumShape shape_or_worst(const std::optional<std::pair<std::int64_t, int>>& s, std::int64_t n) {
  if (!s) return {std::max<std::int64_t>(n, 1), 0};
  if (s->first < 1 || s->first > std::max<std::int64_t>(n, 1) || s->second < 0 || s->second > rmsnorm::kMaxTreeDepth)
    throw py::value_error("a shape is (terms per thread in 1..n, tree depth in 0..64)");
  return {s->first, static_cast<std::int32_t>(s->second)};
}

py::array_t<double> as_array(const std::vector<double>& v, std::int64_t rows, std::int64_t cols) {
  py::array_t<double> a(rows > 1 || cols > 1 ? std::vector<py::ssize_t>{rows, cols} : std::vector<py::ssize_t>{cols});
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// exact, rounded, lo, hi per element of one output tensor.
py::dict intervals(const std::vector<oracle::Acceptance>& acc, DType t, std::int64_t rows, std::int64_t cols) {
  using Kind = oracle::Acceptance::Kind;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> exact, rnd, lo, hi;
  for (const oracle::Acceptance& a : acc) {
    exact.push_back(a.exact);
    rnd.push_back(rmsnorm::decode(a.rounded, t));
    if (a.kind == Kind::any) lo.push_back(-inf), hi.push_back(inf);
    else if (a.kind == Kind::nan_only) lo.push_back(nan), hi.push_back(nan);
    else if (a.kind == Kind::exact_bits) lo.push_back(rnd.back()), hi.push_back(rnd.back());
    else lo.push_back(rmsnorm::decode(a.lo, t)), hi.push_back(rmsnorm::decode(a.hi, t));
  }
  py::dict d;
  d["exact"] = as_array(exact, rows, cols);
  d["rounded"] = as_array(rnd, rows, cols);
  d["lo"] = as_array(lo, rows, cols);
  d["hi"] = as_array(hi, rows, cols);
  return d;
}

struct Judged {
  oracle::ForwardCase fwd;
  oracle::BackwardCase bwd;
  oracle::ForwardAcceptance fa;
  oracle::BackwardAcceptance ba;
};

Judged accept(const harness::Case& c, const std::optional<std::pair<std::int64_t, int>>& row_shape,
              const std::optional<std::pair<std::int64_t, int>>& dg_shape) {
  Judged j;
  std::string error;
  if (c.is_forward()) {
    if (!harness::forward_case(c, j.fwd, error)) throw py::value_error("invalid case: " + error);
    j.fa = oracle::forward_acceptance(j.fwd, shape_or_worst(row_shape, c.dim));
    if (!j.fa.error.empty()) throw py::value_error("invalid case: " + j.fa.error);
  } else {
    if (!harness::backward_case(c, j.bwd, error)) throw py::value_error("invalid case: " + error);
    j.ba = oracle::backward_acceptance(j.bwd, shape_or_worst(row_shape, c.dim), shape_or_worst(dg_shape, c.rows));
    if (!j.ba.error.empty()) throw py::value_error("invalid case: " + j.ba.error);
  }
  return j;
}

py::dict exact(const harness::Case& c, const std::optional<std::pair<std::int64_t, int>>& row_shape,
               const std::optional<std::pair<std::int64_t, int>>& dg_shape) {
  const Judged j = accept(c, row_shape, dg_shape);
  py::dict d;
  if (c.is_forward()) {
    d["y"] = intervals(j.fa.y, c.y_type, c.rows, c.dim);
    d["rstd"] = intervals(j.fa.rstd, DType::f32, 1, c.rows);
    if (!j.fa.scale.empty()) d["scale"] = intervals(j.fa.scale, DType::f32, 1, static_cast<std::int64_t>(j.fa.scale.size()));
    if (!j.fa.h.empty()) {
      std::vector<double> h;
      for (std::uint32_t b : j.fa.h) h.push_back(rmsnorm::decode(b, c.x_type));
      d["h"] = as_array(h, c.rows, c.dim);
    }
  } else {
    d["dx"] = intervals(j.ba.dx, c.x_type, c.rows, c.dim);
    if (!j.ba.dg.empty()) d["dg"] = intervals(j.ba.dg, c.dg_type, 1, c.dim);
  }
  return d;
}

// Bits of t for the values of a kernel's output; each must be a value of t (the kernel rounds).
std::vector<std::uint32_t> bits_of(const char* name, const Array& a, DType t, std::int64_t n) {
  if (a.size() != n) throw py::value_error(std::string(name) + " has " + std::to_string(a.size()) + " values, expected " + std::to_string(n));
  std::vector<std::uint32_t> out(static_cast<std::size_t>(n));
  const double* p = a.data();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t b = rmsnorm::encode(p[i], t);
    const double back = rmsnorm::decode(b, t);
    if (!(back == p[i] || (std::isnan(back) && std::isnan(p[i]))))
      throw py::value_error(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(p[i]) + " is not a " +
                            rmsnorm::to_string(t) + " value: round the outputs to their type (rmsnorm_cert.round_to)");
    out[static_cast<std::size_t>(i)] = b;
  }
  return out;
}

std::vector<float> floats_of(const char* name, const Array& a, std::int64_t n) {
  if (a.size() != n) throw py::value_error(std::string(name) + " has " + std::to_string(a.size()) + " values, expected " + std::to_string(n));
  std::vector<float> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<float>(a.data()[i]));
  return out;
}

// An element of an output tensor with its err/bound (oracle::err_over_bound).
struct Scored {
  double ratio;
  const char* tensor;
  const std::vector<oracle::Acceptance>* acc;
  const std::vector<std::uint32_t>* got;
  DType type;
  std::int64_t index, cols;
};

void score(std::vector<Scored>& out, const char* name, const std::vector<oracle::Acceptance>& acc,
           const std::vector<std::uint32_t>& got, DType t, std::int64_t cols) {
  for (std::size_t i = 0; i < acc.size() && i < got.size(); ++i)
    if (acc[i].kind != oracle::Acceptance::Kind::any)
      out.push_back({oracle::err_over_bound(acc[i], got[i], t), name, &acc, &got, t, static_cast<std::int64_t>(i), cols});
}

// The `count` elements farthest outside (or nearest the edge of) their accepted intervals.
std::vector<py::dict> worst_of(std::vector<Scored>& all, int count) {
  const std::size_t k = std::min(all.size(), static_cast<std::size_t>(std::max(count, 0)));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(),
                    [](const Scored& a, const Scored& b) { return a.ratio > b.ratio; });
  std::vector<py::dict> out;
  for (std::size_t n = 0; n < k; ++n) {
    const Scored& s = all[n];
    const oracle::Acceptance& a = (*s.acc)[static_cast<std::size_t>(s.index)];
    py::dict e;
    e["tensor"] = s.tensor;
    e["row"] = s.index / s.cols;
    e["col"] = s.index % s.cols;
    e["got"] = rmsnorm::decode((*s.got)[static_cast<std::size_t>(s.index)], s.type);
    e["lo"] = rmsnorm::decode(a.lo, s.type);
    e["hi"] = rmsnorm::decode(a.hi, s.type);
    e["exact"] = a.exact;
    e["err_over_bound"] = s.ratio;
    out.push_back(e);
  }
  return out;
}

py::dict judge(const harness::Case& c, const std::optional<Array>& y, const std::optional<Array>& rstd,
               const std::optional<Array>& h, const std::optional<Array>& scale, const std::optional<Array>& dx,
               const std::optional<Array>& dg, const std::optional<std::pair<std::int64_t, int>>& row_shape,
               const std::optional<std::pair<std::int64_t, int>>& dg_shape, int worst_count) {
  const Judged j = accept(c, row_shape, dg_shape);
  const std::int64_t n = c.rows * c.dim;
  oracle::Verdict v;
  std::vector<Scored> scored;
  oracle::ForwardResult fr;
  oracle::BackwardResult br;
  if (c.is_forward()) {
    if (!y) throw py::value_error(std::string(rmsnorm::to_string(c.op)) + " is judged on y");
    oracle::ForwardResult& r = fr;
    r.y = bits_of("y", *y, c.y_type, n);
    if (rstd) r.rstd = floats_of("rstd", *rstd, c.rows);
    if (c.has_add()) {
      if (!h) throw py::value_error("the fused add is judged on h, the residual written back");
      r.h = bits_of("h", *h, c.x_type, n);
    }
    if (c.has_quant() && c.quant != rmsnorm::Quant::static_scale) {
      if (!scale) throw py::value_error("dynamic FP8 modes are judged on their scales");
      r.scale = floats_of("scale", *scale, static_cast<std::int64_t>(j.fa.scale.size()));
    }
    v = oracle::check_forward(j.fwd, r, shape_or_worst(row_shape, c.dim));
    score(scored, "y", j.fa.y, r.y, c.y_type, c.dim);
  } else {
    if (!dx) throw py::value_error(std::string(rmsnorm::to_string(c.op)) + " is judged on dx");
    oracle::BackwardResult& r = br;
    r.dx = bits_of("dx", *dx, c.x_type, n);
    if (dg) r.dg = bits_of("dg", *dg, c.dg_type, c.dim);
    v = oracle::check_backward(j.bwd, r, shape_or_worst(row_shape, c.dim), shape_or_worst(dg_shape, c.rows));
    score(scored, "dx", j.ba.dx, r.dx, c.x_type, c.dim);
    if (dg) score(scored, "dg", j.ba.dg, r.dg, c.dg_type, c.dim);
  }
  py::dict d;
  d["passed"] = v.pass && v.error.empty();
  d["first_failure"] = v.first_failure;
  d["error"] = v.error;
  d["elements"] = v.profile.elements;
  d["correctly_rounded"] = v.profile.correctly_rounded;
  d["failures"] = v.profile.failures;
  d["max_ulp"] = v.profile.max_ulp;
  d["max_err_over_bound"] = v.profile.max_err_over_bound;
  d["worst"] = worst_of(scored, worst_count);
  d["repro"] = harness::one_line(c);
  return d;
}

}  // namespace

PYBIND11_MODULE(rmsnorm_cert_core, m) {
  m.doc() = "The rmsnorm-certified oracle and judge on numpy arrays (use the package rmsnorm_cert).";
  py::class_<harness::Case>(m, "Case")
      .def_property_readonly("op", [](const harness::Case& c) { return std::string(rmsnorm::to_string(c.op)); })
      .def_property_readonly("rows", [](const harness::Case& c) { return c.rows; })
      .def_property_readonly("dim", [](const harness::Case& c) { return c.dim; })
      .def_property_readonly("line", [](const harness::Case& c) { return harness::one_line(c); })
      .def("__repr__", [](const harness::Case& c) { return "<rmsnorm_cert case " + harness::one_line(c).substr(0, 120) + ">"; });
  m.def("make_case", &make_case, py::arg("op"), py::arg("x"), py::arg("g") = py::none(), py::arg("eps") = 1e-6,
        py::arg("x_type") = "f32", py::arg("g_type") = "", py::arg("y_type") = "", py::arg("convention") = "standard",
        py::arg("quant") = "none", py::arg("static_scale") = 1.0, py::arg("o") = py::none(), py::arg("dy") = py::none(),
        py::arg("dresidual") = py::none(), py::arg("rstd") = py::none(), py::arg("dg_type") = "f32");
  m.def("parse_case", [](const std::string& text) {
    harness::Case c;
    std::string error;
    if (!harness::parse_case(text, c, error)) throw py::value_error(error);
    return c;
  });
  m.def("exact", &exact, py::arg("case"), py::arg("row_shape") = py::none(), py::arg("dg_shape") = py::none());
  m.def("judge", &judge, py::arg("case"), py::arg("y") = py::none(), py::arg("rstd") = py::none(), py::arg("h") = py::none(),
        py::arg("scale") = py::none(), py::arg("dx") = py::none(), py::arg("dg") = py::none(), py::arg("row_shape") = py::none(),
        py::arg("dg_shape") = py::none(), py::arg("worst") = 5);
  m.def("round_to", [](const Array& a, const std::string& type) {
    const DType t = parse_or_throw<DType>(type, "type");
    py::array_t<double> out(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
    for (py::ssize_t i = 0; i < a.size(); ++i) out.mutable_data()[i] = rmsnorm::round_to(a.data()[i], t);
    return out;
  }, py::arg("values"), py::arg("type"));
}
