// Canonical forms of the host `index` values the importer computes (dynamic dims and shape
// arithmetic), so that two computations of one quantity get one SSA value. A conv's output
// extent `(h + 2 - 3) floordiv 1 + 1` is `h` itself; the two branches of a ResNet downsample
// (3x3/2 pad 1 and 1x1/2) both compute `(h - 1) floordiv 2 + 1`, and the second gets the
// first's value. Elementwise ops whose `?` extents are then the same SSA value meet without
// any run-time broadcast (Context::Elementwise); different values that are equal in fact only
// cost a host-side choice.
//
// A form is a polynomial with int64 coefficients over atoms: index values nothing here can see
// into (tensor.dim results, shape operands read from tensors, quotients that are not exact,
// min/max/select/compare results), named by their SSA names. Builder (its only user) asks
// `Known` before emitting an op and `Record`s what it emitted. Values are remembered
// (`Record(..., remember = true)`) only where they dominate everything emitted later: the
// function's entry block, never inside a region or a generic body.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Dim.h"

namespace hexir::importers::onnx {

class SymbolicDims {
 public:
  using Monomial = std::vector<std::string>;  // sorted atom names; empty: the constant term
  using Poly = std::map<Monomial, int64_t>;   // no zero coefficients

  // d's form: a constant, its recorded form, or d as an atom.
  Poly Of(const Dim& d) const;
  // a + sign * b; a * b. Empty when a coefficient would overflow or the product has more
  // than kMaxTerms terms (the caller then treats the result as an atom).
  static std::optional<Poly> Sum(const Poly& a, const Poly& b, int64_t sign);
  static std::optional<Poly> Product(const Poly& a, const Poly& b);
  // a / b when the division is exact for every value of the atoms: b is one term whose
  // coefficient and atoms divide every term of a ((4*n*t + 8*n) / (4*n) = t + 2).
  static std::optional<Poly> ExactQuotient(const Poly& a, const Poly& b);

  // The Dim p already is, without emitting anything: a constant, one atom with coefficient 1,
  // or a remembered value of that form.
  std::optional<Dim> Known(const Poly& p) const;
  // `ssa` (just emitted) has form p.
  void Record(const std::string& ssa, const Poly& p, bool remember);

  // Ops whose results are atoms (divsi that is not exact, remsi, minsi, maxsi, cmpi+select,
  // select): keyed by the op and its operands' forms.
  std::string OpKey(const std::string& op, const std::vector<Dim>& operands) const;
  std::optional<Dim> KnownOp(const std::string& key) const;
  void RecordOp(const std::string& key, const std::string& ssa, bool remember);

  static constexpr size_t kMaxTerms = 16;

 private:
  static std::string Key(const Poly& p);
  std::map<std::string, Poly> forms_;           // SSA -> form (only non-atoms)
  std::map<std::string, std::string> values_;   // Key(form) or op key -> SSA (entry block)
};

}  // namespace hexir::importers::onnx
