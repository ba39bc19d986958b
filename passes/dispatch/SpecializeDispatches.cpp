// Gives a dynamic dimension with a hot value its own executable with the dimension static,
// behind a host switch on the run-time value; the generic executable stays for the rest.
//
//   %r = hexir.dispatch @mm(%x, %w, %m) dims(%m)       %m = tensor.dim %x, 0
//                                                  =>  %r = scf.if (%m == 1) {
//                                                        %xs = tensor.cast %x : ?x8 to 1x8
//                                                        %s = hexir.dispatch @mm_a0d0eq1(%xs, %w, %c1)
//                                                        yield tensor.cast %s : 1x16 to ?x16
//                                                      } else { yield hexir.dispatch @mm(...) }
//
// Hot values: `hexir.specialize = array<i64: dim, value, ...>` on a function argument (every
// dispatch taking that argument directly), else 1 for dim 0 of a kernel argument that is the
// left operand of a matmul-shaped contraction (MatmulRows.h: linalg.matmul, or a generic
// multiply-add with B as [K][N] or [N][K]; M = 1 in LLM decode, M = prompt length in
// prefill). Every other operand dim, result dim or scalar operand known equal to a specialized
// (operand, dim) becomes static / a constant too, untested by the switch: on the host
// (DimKeys.h: a `tensor.dim` of it, or the same extent through casts, reshapes, dispatch result
// dims and switches) or by the kernel's ops (KernelExtents.h: a residual added to the M rows).
// hexir-fold-uniform-operands, which runs next, moves such a constant into the kernel. Runs
// before convert-scf-to-cf; each branch is its own segment, until
// hexir-merge-specialization-switches puts a run of switches on one value behind one.
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"
#include "passes/dispatch/DimKeys.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/dispatch/KernelExtents.h"
#include "passes/dispatch/KernelOperands.h"
#include "passes/dispatch/MatmulRows.h"
#include "passes/dispatch/SpecializationSwitch.h"

namespace hexir {
#define GEN_PASS_DEF_SPECIALIZEDISPATCHES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

constexpr char kSpecializeAttr[] = "hexir.specialize";

// Dispatch operand `operand`'s dimension `dim` is `value` in the specialized executable.
struct HotDim {
  unsigned operand;
  int64_t dim;
  int64_t value;
  // Known equal to a tested hot dim (DimKeys.h or KernelExtents.h: a residual's rows that are
  // the input's rows): static in the clone, not tested again by the switch.
  bool derived = false;
  bool operator==(const HotDim& o) const {
    return operand == o.operand && dim == o.dim && value == o.value;
  }
};

// Reads the (dim, value) pairs of `hexir.specialize` on function argument `v`, if any.
FailureOr<SmallVector<std::pair<int64_t, int64_t>>> annotatedDims(Value v) {
  SmallVector<std::pair<int64_t, int64_t>> pairs;
  auto arg = dyn_cast<BlockArgument>(v);
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!func || arg.getOwner() != &func.getBody().front()) return pairs;
  auto attr = func.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(), kSpecializeAttr);
  if (!attr) return pairs;
  auto type = cast<RankedTensorType>(v.getType());
  ArrayRef<int64_t> values = attr.asArrayRef();
  if (values.size() % 2)
    return func.emitError() << kSpecializeAttr << " of argument " << arg.getArgNumber()
                            << " must list (dim, value) pairs, got " << values.size() << " numbers";
  for (size_t i = 0; i < values.size(); i += 2) {
    int64_t dim = values[i], value = values[i + 1];
    // A static 0 extent is not tiled by codegen (dispatch formation removes such ops).
    if (dim < 0 || dim >= type.getRank() || !type.isDynamicDim(dim) || value < 1)
      return func.emitError() << kSpecializeAttr << " of argument " << arg.getArgNumber()
                              << ": dim " << dim << " = " << value
                              << " is not a dynamic dimension of " << type
                              << " with a positive value";
    pairs.push_back({dim, value});
  }
  return pairs;
}

// The hot dims of `d`: annotated function arguments first; else M = 1 of a matmul whose
// left operand is a kernel argument fed by a tensor operand with a dynamic dim 0.
FailureOr<SmallVector<HotDim>> hotDims(DispatchOp d, func::FuncOp kernel) {
  SmallVector<HotDim> hot;
  for (auto [i, v] : llvm::enumerate(d.getArgs())) {
    if (!isa<RankedTensorType>(v.getType())) continue;
    auto pairs = annotatedDims(v);
    if (failed(pairs)) return failure();
    for (auto [dim, value] : *pairs) hot.push_back({unsigned(i), dim, value});
  }
  if (!hot.empty()) return hot;
  kernel.walk([&](linalg::LinalgOp op) {
    if (!IsMatmulLhsRow0(op)) return;
    auto arg = dyn_cast<BlockArgument>(op.getDpsInputs()[0]);
    if (!arg || arg.getOwner() != &kernel.getBody().front()) return;
    unsigned i = arg.getArgNumber();
    if (i >= d.getArgs().size() || KernelArgumentIndex(d, i) != i) return;
    if (!cast<RankedTensorType>(arg.getType()).isDynamicDim(0)) return;
    HotDim h{i, 0, 1};
    if (!llvm::is_contained(hot, h)) hot.push_back(h);
  });
  return hot;
}

// `hot` plus every other dynamic dim of a tensor operand of `d` known equal to one of them:
// on the host (DimKeys.h) or by the kernel's own ops (KernelExtents.h).
SmallVector<HotDim> withDerivedDims(DispatchOp d, ArrayRef<HotDim> hot, const KernelExtents& extents) {
  SmallVector<HotDim> all(hot.begin(), hot.end());
  SmallVector<DimKey> hotKeys;
  for (const HotDim& h : hot) hotKeys.push_back(KeyOfDim(d.getArgs()[h.operand], h.dim));
  for (auto [i, v] : llvm::enumerate(d.getArgs())) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type) continue;
    for (int64_t j = 0; j < type.getRank(); ++j) {
      if (!type.isDynamicDim(j)) continue;
      if (llvm::any_of(all, [&](const HotDim& h) { return h.operand == i && h.dim == j; })) continue;
      DimKey key = KeyOfDim(v, j);
      for (auto [h, hotKey] : llvm::zip_equal(hot, hotKeys)) {
        bool onHost = key.known() && !key.constant && hotKey == key;
        if (!onHost && !extents.Equal(i, j, h.operand, h.dim)) continue;
        all.push_back({unsigned(i), j, h.value, /*derived=*/true});
        break;
      }
    }
  }
  return all;
}

// The hot dim index value `v` is known to equal (DimKeys.h: the same dim of the same tensor
// through `tensor.dim`, casts, dispatch result dims and switches, e.g. an output's rows that
// are the input's rows), or null.
const HotDim* hotDimOf(DispatchOp d, ArrayRef<HotDim> hot, Value v) {
  if (!v.getType().isIndex()) return nullptr;
  DimKey key = KeyOfIndex(v);
  if (!key.known() || key.constant) return nullptr;
  for (const HotDim& h : hot)
    if (KeyOfDim(d.getArgs()[h.operand], h.dim) == key) return &h;
  return nullptr;
}

// The hot dim that dim `dim` of result `r` of `d` equals: its dims operand on the host, or the
// kernel's output argument or returned value by the kernel's ops; or null.
const HotDim* hotResultDim(DispatchOp d, ArrayRef<HotDim> hot, const KernelExtents& extents,
                           unsigned r, int64_t dim, Value dimOperand) {
  if (const HotDim* h = hotDimOf(d, hot, dimOperand)) return h;
  unsigned output = KernelOutputIndex(d, r);
  for (const HotDim& h : hot)
    if (extents.Equal(output, dim, h.operand, h.dim) || extents.ResultEqual(r, dim, h.operand, h.dim))
      return &h;
  return nullptr;
}

// The hot dim that scalar operand `operand` of `d` equals (on the host, or by the kernel's
// ops: the size of a `tensor.empty` dim), or null.
const HotDim* hotScalar(DispatchOp d, ArrayRef<HotDim> hot, const KernelExtents& extents,
                        unsigned operand) {
  Value v = d.getArgs()[operand];
  if (!v.getType().isIndex()) return nullptr;
  if (const HotDim* h = hotDimOf(d, hot, v)) return h;
  for (const HotDim& h : hot)
    if (extents.Equal(KernelArgumentIndex(d, operand), -1, h.operand, h.dim)) return &h;
  return nullptr;
}

RankedTensorType withStaticDim(Type t, int64_t dim, int64_t value) {
  auto tensor = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] = value;
  return tensor.clone(shape);
}

// Makes kernel argument `arg` of `kernel` static (`type`); uses see the old type via a cast.
void specializeArgument(func::FuncOp kernel, unsigned arg, RankedTensorType type) {
  BlockArgument a = kernel.getArgument(arg);
  Type dynamicType = a.getType();
  a.setType(type);
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  auto cast = tensor::CastOp::create(b, kernel.getLoc(), dynamicType, a);
  a.replaceAllUsesExcept(cast, cast);
}

// Canonicalization of every loaded dialect and op on `op` (folds the casts into the ops).
void canonicalize(Operation* op) {
  MLIRContext* ctx = op->getContext();
  RewritePatternSet patterns(ctx);
  for (Dialect* dialect : ctx->getLoadedDialects()) dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    name.getCanonicalizationPatterns(patterns, ctx);
  (void)applyPatternsGreedily(op, std::move(patterns));
}

std::string specializedName(StringRef exe, ArrayRef<HotDim> hot) {
  std::string name = exe.str();
  for (const HotDim& h : hot)
    name += "_a" + std::to_string(h.operand) + "d" + std::to_string(h.dim) + "eq" +
            std::to_string(h.value);
  return name;
}

class SpecializeDispatches : public impl::SpecializeDispatchesBase<SpecializeDispatches> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<DispatchOp> dispatches;
    for (auto func : module.getOps<func::FuncOp>()) func.walk([&](DispatchOp d) { dispatches.push_back(d); });
    for (DispatchOp d : dispatches) {
      if (d->hasAttr(kTiedOperandsAttr)) continue;  // in-place updates keep their buffer
      auto exe = module.lookupSymbol<ExecutableOp>(d.getExecutableAttr());
      func::FuncOp kernel = exe ? KernelOf(exe) : nullptr;
      if (!kernel) continue;
      auto hot = hotDims(d, kernel);
      if (failed(hot)) return signalPassFailure();
      if (hot->empty()) continue;
      KernelExtents extents(kernel);
      specialize(d, exe, withDerivedDims(d, *hot, extents), extents);
    }
  }

 private:
  // The specialized executable for (exe, hot), created once.
  ExecutableOp specializedExecutable(DispatchOp d, ExecutableOp exe, ArrayRef<HotDim> hot,
                                     ArrayRef<RankedTensorType> resultTypes) {
    std::string name = specializedName(exe.getSymName(), hot);
    ModuleOp module = getOperation();
    if (auto existing = module.lookupSymbol<ExecutableOp>(name)) return existing;
    OpBuilder b(exe);
    b.setInsertionPointAfter(exe);
    auto copy = cast<ExecutableOp>(b.clone(*exe));
    func::FuncOp kernel = KernelOf(copy);
    kernel.setSymName(name);
    copy.setSymName(name);
    for (const HotDim& h : hot) {
      unsigned arg = KernelArgumentIndex(d, h.operand);
      specializeArgument(kernel, arg, withStaticDim(kernel.getArgument(arg).getType(), h.dim, h.value));
    }
    for (auto [r, type] : llvm::enumerate(resultTypes))
      if (type != d->getResult(r).getType()) specializeArgument(kernel, KernelOutputIndex(d, r), type);
    kernel.walk([&](func::ReturnOp ret) {
      OpBuilder rb(ret);
      for (auto [r, type] : llvm::enumerate(resultTypes))
        if (ret.getOperand(r).getType() != type)
          ret.setOperand(r, tensor::CastOp::create(rb, ret.getLoc(), type, ret.getOperand(r)));
    });
    kernel.setType(FunctionType::get(kernel.getContext(), kernel.getBody().front().getArgumentTypes(),
                                     SmallVector<Type>(resultTypes.begin(), resultTypes.end())));
    canonicalize(copy.getInnerModule());
    return copy;
  }

  void specialize(DispatchOp d, ExecutableOp exe, ArrayRef<HotDim> hot, const KernelExtents& extents) {
    Location loc = d.getLoc();
    // Specialized result types and the result dims that stay dynamic.
    SmallVector<RankedTensorType> resultTypes;
    SmallVector<Value> resultDims;
    unsigned nextDim = 0;
    for (auto [r, result] : llvm::enumerate(d.getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      for (int64_t i = 0; i < type.getRank(); ++i) {
        if (!type.isDynamicDim(i)) continue;
        Value dim = d.getResultDims()[nextDim++];
        if (const HotDim* h = hotResultDim(d, hot, extents, r, i, dim)) type = withStaticDim(type, i, h->value);
        else resultDims.push_back(dim);
      }
      resultTypes.push_back(type);
    }
    ExecutableOp specialized = specializedExecutable(d, exe, hot, resultTypes);

    OpBuilder b(d);
    Value condition;
    for (const HotDim& h : hot) {
      if (h.derived) continue;
      Value dim = tensor::DimOp::create(b, loc, d.getArgs()[h.operand], h.dim);
      Value eq = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim,
                                       arith::ConstantIndexOp::create(b, loc, h.value));
      condition = condition ? arith::AndIOp::create(b, loc, condition, eq).getResult() : eq;
    }
    auto ifOp = scf::IfOp::create(b, loc, d.getResultTypes(), condition,
                                  /*addThenBlock=*/true, /*addElseBlock=*/true);
    ifOp->setAttr(kSpecializationSwitchAttr, b.getUnitAttr());
    d->replaceAllUsesWith(ifOp.getResults());

    b.setInsertionPointToEnd(ifOp.elseBlock());
    auto elseYield = scf::YieldOp::create(b, loc, d.getResults());
    d->moveBefore(elseYield);

    b.setInsertionPointToEnd(ifOp.thenBlock());
    SmallVector<Value> operands(d.getArgs());
    for (const HotDim& h : hot)
      operands[h.operand] = tensor::CastOp::create(
          b, loc, withStaticDim(operands[h.operand].getType(), h.dim, h.value), operands[h.operand]);
    for (auto [k, v] : llvm::enumerate(operands))
      if (const HotDim* h = hotScalar(d, hot, extents, k)) v = arith::ConstantIndexOp::create(b, loc, h->value);
    auto fast = DispatchOp::create(b, loc, SmallVector<Type>(resultTypes.begin(), resultTypes.end()),
                                   FlatSymbolRefAttr::get(specialized.getSymNameAttr()), operands,
                                   resultDims);
    if (Attribute device = d->getAttr(kDeviceAttr)) fast->setAttr(kDeviceAttr, device);
    SmallVector<Value> yielded;
    for (auto [r, v] : llvm::enumerate(fast.getResults()))
      yielded.push_back(v.getType() == d->getResult(r).getType()
                            ? Value(v)
                            : Value(tensor::CastOp::create(b, loc, d->getResult(r).getType(), v)));
    scf::YieldOp::create(b, loc, yielded);
  }
};

}  // namespace
}  // namespace hexir
