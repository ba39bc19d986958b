// Typed builders for the HAL imports, generated from hal/module/hal_imports.def: one per row,
// named like its Id, taking exactly the row's fixed arguments (plus one ValueRange for a '*'
// tail) and returning its one result (or nothing):
//
//   Value view = hal_import::BufferViewCreate(b, loc, buffer, type, dims);  // "ri*_r"
//   hal_import::CommandBufferBarrier(b, loc, cb);                            // "r"
//
// A call with the wrong number of arguments does not compile. Argument kinds ('i' i64,
// 'f' f64, 'r' ref) are checked as the call is built: a mismatch is a bug of the lowering
// (the kinds come from its code, never from the input), reported like an MLIR assertion.
// The emitted op is the `hexir_vm.call_import` the bytecode writer turns into call.import.
#pragma once

#include <cstddef>
#include <utility>

#include "dialects/vm/IR/VMOps.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"
#include "mlir/IR/Builders.h"

namespace hexir::hal_import {
namespace detail {

// Signature patterns: "args_results" over {i, f, r}; '*' ends the fixed arguments.
constexpr size_t FixedArgCount(const char* sig) {
  size_t n = 0;
  while (sig[n] && sig[n] != '_' && sig[n] != '*') ++n;
  return n;
}
constexpr bool HasTail(const char* sig) { return sig[FixedArgCount(sig)] == '*'; }
constexpr const char* Results(const char* sig) {
  while (*sig && *sig != '_') ++sig;
  return *sig ? sig + 1 : sig;
}
constexpr size_t ResultCount(const char* sig) {
  size_t n = 0;
  for (const char* r = Results(sig); *r; ++r) ++n;
  return n;
}

inline mlir::Type TypeOfKind(mlir::OpBuilder& b, char kind) {
  if (kind == 'i') return b.getI64Type();
  if (kind == 'f') return b.getF64Type();
  return vmir::RefType::get(b.getContext());
}

inline void CheckKind(const char* name, size_t index, char want, mlir::Value v) {
  char got = vmir::SignatureChar(v.getType());
  if (got != want)
    llvm::report_fatal_error(llvm::Twine(name) + ": argument " + llvm::Twine(index) + " is '" +
                             llvm::Twine(got ? got : '?') + "', the import takes '" + llvm::Twine(want) + "'");
}

template <size_t>
using ArgValue = mlir::Value;

// The builder of import `Name` with signature pattern `Sig`; `I` indexes its fixed arguments.
template <const char* Name, const char* Sig, typename I = std::make_index_sequence<FixedArgCount(Sig)>>
struct Builder;

template <const char* Name, const char* Sig, size_t... I>
struct Builder<Name, Sig, std::index_sequence<I...>> {
  static_assert(ResultCount(Sig) <= 1, "hal_imports.def: a builder returns at most one result");
  using Result = std::conditional_t<ResultCount(Sig) == 0, void, mlir::Value>;

  template <bool Tail = HasTail(Sig), std::enable_if_t<!Tail, int> = 0>
  Result operator()(mlir::OpBuilder& b, mlir::Location loc, ArgValue<I>... args) const {
    return Build(b, loc, {args...}, {});
  }
  template <bool Tail = HasTail(Sig), std::enable_if_t<Tail, int> = 0>
  Result operator()(mlir::OpBuilder& b, mlir::Location loc, ArgValue<I>... args,
                    mlir::ValueRange tail) const {
    return Build(b, loc, {args...}, tail);
  }

 private:
  static Result Build(mlir::OpBuilder& b, mlir::Location loc, llvm::ArrayRef<mlir::Value> fixed,
                      mlir::ValueRange tail) {
    llvm::SmallVector<mlir::Value> operands(fixed.begin(), fixed.end());
    for (size_t i = 0; i < fixed.size(); ++i) CheckKind(Name, i, Sig[i], fixed[i]);
    operands.append(tail.begin(), tail.end());
    llvm::SmallVector<mlir::Type, 1> results;
    for (const char* r = Results(Sig); *r; ++r) results.push_back(TypeOfKind(b, *r));
    auto op = vmir::CallImportOp::create(b, loc, results, b.getStringAttr(Name), operands);
    if constexpr (ResultCount(Sig) == 1) return op.getResult(0);
  }
};

}  // namespace detail

#define HAL_IMPORT(Id, name, sig, meaning)    \
  namespace detail {                          \
  inline constexpr char k##Id##Name[] = name; \
  inline constexpr char k##Id##Sig[] = sig;   \
  }                                           \
  inline constexpr detail::Builder<detail::k##Id##Name, detail::k##Id##Sig> Id{};
#include "hal/module/hal_imports.def"
#undef HAL_IMPORT

}  // namespace hexir::hal_import
