// #hexir.sharding<replicated | split D | partial> (HexirShardingAttr.td): syntax and
// registration.
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/DialectImplementation.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/hexir/IR/HexirOpsAttrs.cpp.inc"

namespace hexir {

void HexirDialect::registerShardingAttr() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/hexir/IR/HexirOpsAttrs.cpp.inc"
      >();
}

mlir::Attribute ShardingAttr::parse(mlir::AsmParser& parser, mlir::Type) {
  llvm::StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword)) return {};
  ShardingKind kind;
  int64_t dim = 0;
  if (keyword == "replicated") {
    kind = ShardingKind::Replicated;
  } else if (keyword == "partial") {
    kind = ShardingKind::Partial;
  } else if (keyword == "split") {
    kind = ShardingKind::Split;
    if (parser.parseInteger(dim)) return {};
    if (dim < 0) {
      parser.emitError(parser.getCurrentLocation(), "split dimension must be >= 0, got ") << dim;
      return {};
    }
  } else {
    parser.emitError(parser.getCurrentLocation(),
                     "expected 'replicated', 'split D' or 'partial', got '")
        << keyword << "'";
    return {};
  }
  if (parser.parseGreater()) return {};
  return ShardingAttr::get(parser.getContext(), kind, dim);
}

void ShardingAttr::print(mlir::AsmPrinter& printer) const {
  switch (getKind()) {
    case ShardingKind::Replicated: printer << "<replicated>"; break;
    case ShardingKind::Partial: printer << "<partial>"; break;
    case ShardingKind::Split: printer << "<split " << getDim() << ">"; break;
  }
}

}  // namespace hexir
