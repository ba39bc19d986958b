// The rewrite patterns of hexir-convert-to-vm's host lowering: one per host op, applied by
// HostLowering's driver (HostLowering.cpp) to every op of a host function in block order.
// A pattern's match is the op's legality predicate (a failure gives its reason through
// `notifyMatchFailure`, reported as the op's error); its rewrite is the HostLowering method of
// the op's concern (LowerTensors.cpp, LowerControlFlow.cpp, ...), which emits VM ops at the end
// of the current VM block and records what the op's results became: a scalar a register, a
// tensor its buffer and one i64 register per dim (written `%t.buf`, `%t.d0` below).
#include "passes/vm/HostLowering.h"

namespace hexir::vm_lowering {
namespace {

// A pattern lowering ops of type OpTy through `lowering`.
template <typename OpTy>
class HostPattern : public OpRewritePattern<OpTy> {
 public:
  HostPattern(MLIRContext* ctx, HostLowering& lowering)
      : OpRewritePattern<OpTy>(ctx), lowering(lowering) {}

 protected:
  HostLowering& lowering;
};

// A pattern whose op is always legal here: the rewrite is the HostLowering method `Rewrite`.
template <typename OpTy, auto Rewrite>
struct LowerWith : HostPattern<OpTy> {
  using HostPattern<OpTy>::HostPattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter&) const override {
    return (this->lowering.*Rewrite)(op);
  }
};

// The first operand or result type of `op` that is not a host scalar; null when all are.
Type firstNonScalarType(Operation* op, HostLowering& lowering) {
  for (Type t : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
    if (!lowering.vmType(t) || isa<RankedTensorType>(t)) return t;
  return Type();
}

/// A scalar constant becomes a register; a tensor constant a ref global uploaded once by the
/// module initializer (`__hexir_init`), with constant dims.
///   %c = arith.constant 3 : index                 ==>  %c = hexir_vm.const.i64 3
///   %t = arith.constant dense<...> : tensor<2xf32> ==>  %t.buf = hexir_vm.global.load.ref G
///                                                      %t.d0 = hexir_vm.const.i64 2
struct ConstantLowering : HostPattern<arith::ConstantOp> {
  using HostPattern::HostPattern;
  LogicalResult matchAndRewrite(arith::ConstantOp c, PatternRewriter& rewriter) const override {
    if (isa<RankedTensorType>(c.getType())) {
      if (!isa<DenseElementsAttr>(c.getValue()))
        return rewriter.notifyMatchFailure(
            c, "unsupported constant encoding for target 'cpu' (need dense<...>)");
      return lowering.lowerTensorConstant(c);
    }
    if (!isa<FloatAttr, IntegerAttr>(c.getValue()))
      return rewriter.notifyMatchFailure(c, "unsupported scalar constant for target 'cpu'");
    return lowering.lowerScalarConstant(c);
  }
};

/// An execution region becomes its host work and one memoized command buffer
/// (LowerExecutionRegions.cpp):
///   %r, %tp = hexir.execute on(0, "compute") -> tensor<4xf32> { hexir.dispatch @k(...) }
///   ==>  %r.buf = hal.device.queue.alloca(dev, 16)          (parameter buffers likewise)
///        %cb = hexir_vm.global.load.ref G; ref.is_null; cond_br ^record, ^replay
///        ^record: hal.command_buffer.create / dispatch_slots / finalize; global.store.ref
///        ^replay(%cb): hal.device.queue.execute_bound(dev, %cb, ..., bindings)
using ExecuteLowering = LowerWith<ExecuteOp, &HostLowering::lowerExecute>;

/// The channel's rank or rank count, asked of the region device's default channel:
///   %r = hexir.channel.rank : index  ==>  %ch = hal.channel.default(dev)
///                                         %r = hal.channel.rank(%ch)
template <typename OpTy>
using ChannelQueryLowering = LowerWith<OpTy, &HostLowering::lowerChannelQuery>;

/// A row-major reshape aliases its source's bytes; a collapsed dim is the product of its
/// group, an expanded dynamic dim its `output_shape` value:
///   %r = tensor.collapse_shape %t [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
///   ==>  %r.buf = %t.buf;  %r.d0 = hexir_vm.inst "mul.i64"(%t.d0, %t.d1)
template <typename OpTy>
using ReshapeLowering = LowerWith<OpTy, &HostLowering::lowerReshape>;

/// A cast aliases its source; its static dims become constants (hexir-insert-shape-checks put
/// the check that they hold before it):
///   %r = tensor.cast %t : tensor<?xf32> to tensor<4xf32>
///   ==>  %r.buf = %t.buf;  %r.d0 = hexir_vm.const.i64 4
using CastLowering = LowerWith<tensor::CastOp, &HostLowering::lowerCast>;

/// A check is one host assert, run before the region whose dispatches it guards is submitted:
///   hexir.check %ok, "dim {} ..."(%n) : index  ==>  hexir_vm.assert %ok, "dim {} ..."(%n)
using CheckLowering = LowerWith<CheckOp, &HostLowering::lowerCheck>;

/// A host empty (returned or passed on with no producer) is a zeroed buffer on its device:
///   %e = tensor.empty(%n) : tensor<?x4xf32>
///   ==>  %size = hexir_vm.inst "mul.i64"(%n, 16)
///        %e.buf = hal.allocator.allocate(dev, %size);  %e.d0 = %n
using EmptyLowering = LowerWith<tensor::EmptyOp, &HostLowering::lowerEmpty>;

/// A dim is the register already holding it (no instruction):
///   %d = tensor.dim %t, %c1 : tensor<?x?xf32>  ==>  %d = %t.d1
struct DimLowering : HostPattern<tensor::DimOp> {
  using HostPattern::HostPattern;
  LogicalResult matchAndRewrite(tensor::DimOp d, PatternRewriter& rewriter) const override {
    if (!d.getConstantIndex())
      return rewriter.notifyMatchFailure(
          d, "unsupported tensor.dim (needs a constant index) for target 'cpu'");
    return lowering.lowerDim(d);
  }
};

/// One element read back by the host, through the device holding the tensor (it waits for
/// that device's work):
///   %x = tensor.extract %t[%i] : tensor<8xi64>
///   ==>  %off = hexir_vm.inst "mul.i64"(%i, 8)
///        %x = hal.device.read_i64(dev, %t.buf, %off, i64's type code)    (f32/f64: read_f64)
struct ExtractLowering : HostPattern<tensor::ExtractOp> {
  using HostPattern::HostPattern;
  LogicalResult matchAndRewrite(tensor::ExtractOp e, PatternRewriter& rewriter) const override {
    Type et = e.getTensor().getType().getElementType();
    if (!isHostReadableElement(et))
      return rewriter.notifyMatchFailure(e, [&](Diagnostic& diag) {
        diag << "unsupported element type " << et
             << " for a host read (tensor.extract) for target 'cpu'";
      });
    return lowering.lowerExtract(e);
  }
};

/// A call passes tensors as views and unwraps the views it gets back:
///   %r = func.call @f(%t) : (tensor<?xf32>) -> tensor<?xf32>
///   ==>  %v = hal.buffer_view.create(%t.buf, type, %t.d0)   (or %t's own argument view)
///        %rv = hexir_vm.call @f(%v)
///        %r.buf = hal.buffer_view.buffer(%rv);  %r.d0 = hal.buffer_view.dim(%rv, 0)
using CallLowering = LowerWith<func::CallOp, &HostLowering::lowerCall>;

/// A tensor crosses a block edge as its buffer and its dynamic dims:
///   cf.br ^bb1(%t : tensor<?x4xf32>)  ==>  hexir_vm.br ^bb1(%t.buf, %t.d0)
using BranchLowering = LowerWith<cf::BranchOp, &HostLowering::lowerBranch>;

///   cf.cond_br %c, ^a(%t : tensor<?xf32>), ^b  ==>  hexir_vm.cond_br %c, ^a(%t.buf, %t.d0), ^b
using CondBranchLowering = LowerWith<cf::CondBranchOp, &HostLowering::lowerCondBranch>;

/// Returned tensors are views (an argument's own view when it is returned as is):
///   func.return %t : tensor<?xf32>
///   ==>  %v = hal.buffer_view.create(%t.buf, type, %t.d0);  hexir_vm.return %v
using ReturnLowering = LowerWith<func::ReturnOp, &HostLowering::lowerReturn>;

/// A tensor global is a ref global holding its buffer; its static dims are constants:
///   %g = hexir.global.load @w : tensor<4xf32>
///   ==>  %g.buf = hexir_vm.global.load.ref G;  %g.d0 = hexir_vm.const.i64 4
using GlobalLoadLowering = LowerWith<GlobalLoadOp, &HostLowering::lowerGlobalLoad>;

///   hexir.global.store %t, @w : tensor<4xf32>  ==>  hexir_vm.global.store.ref %t.buf, G
using GlobalStoreLowering = LowerWith<GlobalStoreOp, &HostLowering::lowerGlobalStore>;

///   %same = hexir.same_buffer %a, %b : tensor<4xf32>  ==>  %same = hexir_vm.cmp.eq.ref %a.buf, %b.buf
using SameBufferLowering = LowerWith<SameBufferOp, &HostLowering::lowerSameBuffer>;

/// Host arith on scalars: i64 / f64 registers, the instructions from lowerScalarArith's table;
/// an i32 result is sign-extended again, an i1 result masked:
///   %s = arith.addi %a, %b : i32  ==>  %w = hexir_vm.inst "add.i64"(%a, %b)
///                                      %s = hexir_vm.inst "trunc.i64.i32"(%w)
template <typename OpTy>
struct ScalarArithLowering : HostPattern<OpTy> {
  using HostPattern<OpTy>::HostPattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter& rewriter) const override {
    if (Type t = firstNonScalarType(op, this->lowering))
      return rewriter.notifyMatchFailure(op, [&](Diagnostic& diag) {
        diag << "unsupported op '" << op->getName() << "' on " << t
             << " in a host function for target 'cpu'";
      });
    return this->lowering.lowerScalarArith(op);
  }
};

template <typename... Ops>
void addScalarArith(RewritePatternSet& patterns, HostLowering& lowering) {
  (patterns.add<ScalarArithLowering<Ops>>(patterns.getContext(), lowering), ...);
}

}  // namespace

void populateHostLoweringPatterns(RewritePatternSet& patterns, HostLowering& lowering) {
  patterns.add<ConstantLowering, ExecuteLowering, ChannelQueryLowering<ChannelRankOp>,
               ChannelQueryLowering<ChannelCountOp>, ReshapeLowering<tensor::ExpandShapeOp>,
               ReshapeLowering<tensor::CollapseShapeOp>, CastLowering, CheckLowering,
               EmptyLowering, DimLowering, ExtractLowering, CallLowering, BranchLowering,
               CondBranchLowering, ReturnLowering, GlobalLoadLowering, GlobalStoreLowering,
               SameBufferLowering>(
      patterns.getContext(), lowering);
  addScalarArith<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp, arith::RemSIOp,
                 arith::DivUIOp, arith::RemUIOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp,
                 arith::ShLIOp, arith::ShRSIOp, arith::ShRUIOp, arith::MinSIOp, arith::MaxSIOp,
                 arith::FloorDivSIOp, arith::CeilDivSIOp, arith::AddFOp, arith::SubFOp,
                 arith::MulFOp, arith::DivFOp, arith::NegFOp, arith::CmpIOp, arith::CmpFOp,
                 arith::SelectOp, arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
                 arith::ExtUIOp, arith::TruncIOp, arith::SIToFPOp, arith::FPToSIOp,
                 arith::ExtFOp, arith::TruncFOp>(patterns, lowering);
}

LogicalResult emitNoPattern(Operation* op, HostLowering& lowering) {
  if (isa<DispatchOp>(op))
    return op->emitError(
        "hexir.dispatch outside a hexir.execute region (run hexir-form-execution-regions first)");
  if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, BroadcastOp, SendOp, RecvOp>(op))
    return op->emitError(
        "collective outside a hexir.execute region (run hexir-form-execution-regions first)");
  if (op->getDialect() && op->getDialect()->getNamespace() == "arith")
    if (Type t = firstNonScalarType(op, lowering))
      return op->emitError() << "unsupported op '" << op->getName() << "' on " << t
                             << " in a host function for target 'cpu'";
  return op->emitError() << "unsupported op '" << op->getName()
                         << "' in a host function for target 'cpu'";
}

}  // namespace hexir::vm_lowering
