#include "passes/codegen/WorkgroupCount.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace hexir::codegen {
using namespace mlir;

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return a <= 0 ? 0 : 1 + (a - 1) / b; }
}  // namespace

int64_t EvaluateWorkgroupCount(int64_t n, int64_t tile, int64_t limit) {
  int64_t t = std::max(tile, CeilDiv(n, limit));
  return std::max<int64_t>(1, CeilDiv(n, t));
}

Value BuildWorkgroupTile(OpBuilder& b, Location loc, Value n, int64_t tile, int64_t limit) {
  Value grown = arith::CeilDivSIOp::create(b, loc, n, arith::ConstantIndexOp::create(b, loc, limit));
  return arith::MaxSIOp::create(b, loc, grown, arith::ConstantIndexOp::create(b, loc, tile));
}

std::optional<int64_t> ParameterWordOf(func::FuncOp kernel, Value extent, unsigned argCount) {
  Block& entry = kernel.getBody().front();
  // The word of argument `arg` (a scalar), or of its dynamic dim `dim`.
  auto wordOf = [&](BlockArgument arg, std::optional<int64_t> dim) -> std::optional<int64_t> {
    if (arg.getOwner() != &entry || arg.getArgNumber() >= argCount) return std::nullopt;
    int64_t word = 0;
    for (unsigned i = 0; i < arg.getArgNumber(); ++i) {
      auto shaped = dyn_cast<ShapedType>(entry.getArgument(i).getType());
      word += shaped ? shaped.getNumDynamicDims() : 1;
    }
    auto shaped = dyn_cast<ShapedType>(arg.getType());
    if (!dim) {
      Type t = arg.getType();
      return !shaped && (t.isIndex() || t.isInteger(64)) ? std::optional<int64_t>(word)
                                                         : std::nullopt;
    }
    if (!shaped || !shaped.isDynamicDim(*dim)) return std::nullopt;
    for (int64_t d = 0; d < *dim; ++d) word += shaped.isDynamicDim(d) ? 1 : 0;
    return word;
  };
  Value v = extent;
  for (int step = 0; step < 64; ++step) {  // each step follows one tensor.empty size
    if (auto arg = dyn_cast<BlockArgument>(v)) return wordOf(arg, std::nullopt);
    auto dim = v.getDefiningOp<tensor::DimOp>();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index) return std::nullopt;
    Value source = dim.getSource();
    for (;;) {  // a destination-style result has its init's shape
      if (auto castOp = source.getDefiningOp<tensor::CastOp>()) {
        source = castOp.getSource();
      } else if (auto dps = source.getDefiningOp<DestinationStyleOpInterface>()) {
        source = dps.getTiedOpOperand(cast<OpResult>(source))->get();
      } else {
        break;
      }
    }
    if (auto arg = dyn_cast<BlockArgument>(source)) return wordOf(arg, index);
    auto empty = source.getDefiningOp<tensor::EmptyOp>();
    if (!empty || !empty.getType().isDynamicDim(*index)) return std::nullopt;
    v = empty.getDynamicSize(*index);
  }
  return std::nullopt;
}

void SetDynamicWorkgroupCount(ExecutableOp exe, const DynamicWorkgroupCount& count) {
  Builder b(exe.getContext());
  exe->removeAttr(kWorkgroupCountAttr);
  exe->setAttr(kWorkgroupCountDynamicAttr,
               b.getDictionaryAttr({
                   b.getNamedAttr("extent_words", b.getDenseI64ArrayAttr(count.extentWords)),
                   b.getNamedAttr("extent_factor", b.getI64IntegerAttr(count.extentFactor)),
                   b.getNamedAttr("tile", b.getI64IntegerAttr(count.tile)),
                   b.getNamedAttr("limit", b.getI64IntegerAttr(count.limit)),
               }));
}

FailureOr<std::optional<DynamicWorkgroupCount>> GetDynamicWorkgroupCount(ExecutableOp exe) {
  Attribute attr = exe->getAttr(kWorkgroupCountDynamicAttr);
  if (!attr) return std::optional<DynamicWorkgroupCount>();
  auto dict = dyn_cast<DictionaryAttr>(attr);
  auto words = dict ? dict.getAs<DenseI64ArrayAttr>("extent_words") : nullptr;
  auto factor = dict ? dict.getAs<IntegerAttr>("extent_factor") : nullptr;
  auto tile = dict ? dict.getAs<IntegerAttr>("tile") : nullptr;
  auto limit = dict ? dict.getAs<IntegerAttr>("limit") : nullptr;
  if (!words || !factor || !tile || !limit || tile.getInt() < 1 || limit.getInt() < 1 ||
      limit.getInt() > 0x7fffffff || factor.getInt() < 0 ||
      llvm::any_of(words.asArrayRef(), [](int64_t w) { return w < 0; })) {
    return exe.emitError(kWorkgroupCountDynamicAttr)
           << " must be {extent_words = array<i64: words >= 0>, extent_factor >= 0, tile >= 1, "
              "1 <= limit < 2^31}";
  }
  DynamicWorkgroupCount count;
  count.extentWords.assign(words.asArrayRef().begin(), words.asArrayRef().end());
  count.extentFactor = factor.getInt();
  count.tile = tile.getInt();
  count.limit = limit.getInt();
  return std::optional<DynamicWorkgroupCount>(count);
}

}  // namespace hexir::codegen
