#include "compiler/importers/onnx/SymbolicDims.h"

#include <algorithm>

namespace hexir::importers::onnx {

namespace {

using Poly = SymbolicDims::Poly;
using Monomial = SymbolicDims::Monomial;

bool AddTo(Poly& p, const Monomial& m, int64_t c) {
  int64_t& slot = p[m];
  if (__builtin_add_overflow(slot, c, &slot)) return false;
  if (slot == 0) p.erase(m);
  return true;
}

// Whether `part` (sorted) is a sub-multiset of `whole` (sorted); `rest` gets whole - part.
bool Divides(const Monomial& part, const Monomial& whole, Monomial* rest) {
  rest->clear();
  size_t i = 0;
  for (const std::string& a : whole) {
    if (i < part.size() && part[i] == a) ++i;
    else rest->push_back(a);
  }
  return i == part.size();
}

}  // namespace

Poly SymbolicDims::Of(const Dim& d) const {
  if (!d.dynamic()) return d.v == 0 ? Poly{} : Poly{{Monomial{}, d.v}};
  auto it = forms_.find(d.ssa);
  if (it != forms_.end()) return it->second;
  return Poly{{Monomial{d.ssa}, 1}};
}

std::optional<Poly> SymbolicDims::Sum(const Poly& a, const Poly& b, int64_t sign) {
  Poly r = a;
  for (const auto& [m, c] : b) {
    int64_t term;
    if (__builtin_mul_overflow(c, sign, &term) || !AddTo(r, m, term)) return std::nullopt;
  }
  if (r.size() > kMaxTerms) return std::nullopt;
  return r;
}

std::optional<Poly> SymbolicDims::Product(const Poly& a, const Poly& b) {
  if (a.size() * b.size() > kMaxTerms * kMaxTerms) return std::nullopt;
  Poly r;
  for (const auto& [ma, ca] : a)
    for (const auto& [mb, cb] : b) {
      Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t c;
      if (__builtin_mul_overflow(ca, cb, &c) || !AddTo(r, m, c)) return std::nullopt;
    }
  if (r.size() > kMaxTerms) return std::nullopt;
  return r;
}

std::optional<Poly> SymbolicDims::ExactQuotient(const Poly& a, const Poly& b) {
  if (b.size() != 1) return std::nullopt;
  const auto& [mb, cb] = *b.begin();
  Poly r;
  Monomial rest;
  for (const auto& [ma, ca] : a) {
    if (ca % cb != 0 || !Divides(mb, ma, &rest)) return std::nullopt;
    r[rest] = ca / cb;  // distinct ma give distinct rests
  }
  return r;
}

std::optional<Dim> SymbolicDims::Known(const Poly& p) const {
  if (p.empty()) return Dim::Static(0);
  if (p.size() == 1) {
    const auto& [m, c] = *p.begin();
    if (m.empty()) return Dim::Static(c);
    if (m.size() == 1 && c == 1) return Dim::Dynamic(m[0]);
  }
  auto it = values_.find(Key(p));
  if (it != values_.end()) return Dim::Dynamic(it->second);
  return std::nullopt;
}

void SymbolicDims::Record(const std::string& ssa, const Poly& p, bool remember) {
  forms_[ssa] = p;
  if (remember) values_.emplace(Key(p), ssa);
}

std::string SymbolicDims::OpKey(const std::string& op, const std::vector<Dim>& operands) const {
  std::string k = op + "(";
  for (const Dim& d : operands) k += Key(Of(d)) + ";";
  return k + ")";
}

std::optional<Dim> SymbolicDims::KnownOp(const std::string& key) const {
  auto it = values_.find(key);
  if (it != values_.end()) return Dim::Dynamic(it->second);
  return std::nullopt;
}

void SymbolicDims::RecordOp(const std::string& key, const std::string& ssa, bool remember) {
  if (remember) values_.emplace(key, ssa);
}

std::string SymbolicDims::Key(const Poly& p) {
  std::string k = "[";
  for (const auto& [m, c] : p) {
    k += std::to_string(c);
    for (const std::string& a : m) k += "*" + a;
    k += " ";
  }
  return k + "]";
}

}  // namespace hexir::importers::onnx
