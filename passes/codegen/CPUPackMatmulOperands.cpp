// Packs the right-hand side of micro-kernel matmuls once per dispatch instead of once per
// workgroup, and one known at load (a constant or a `hexir.parameter` argument,
// dispatch/LoadTimeValues.h) once at load (the layout: CPUMatmulMicroKernel.cpp).
//
//   exe @mm: func @mm(%a, %b: tensor<KxN>, %o)          exe @pack_rhs_KxNxNR: Bp = pack(%b)
//     linalg.matmul ins(%a, %b) ...               =>    exe @mm: func @mm(%a, %bp: tensor<PxKxNR>, %o)
//   host: hexir.dispatch @mm(%x, %w)                       %b = unpack(%bp) {hexir.packed_rhs}
//                                                          linalg.matmul ins(%a, %b) ...
//                                                    host: %wp = hexir.dispatch @pack_rhs_KxNxNR(%w)
//                                                          hexir.dispatch @mm(%x, %wp)
//
// A dense convolution (CPUConvolutionKernel.h) whose filter w[F][C][KH][KW] is known at load
// at every dispatch gets it packed the same way as the B[K][F] of its GEMM, B[k][f] = w[f][k]
// (`pack_filter_FxCxKHxKW_NR`, ceil(F/NR) panels of C*KH*KW x NR, zero past F), read through
// an unpack generic marked `hexir.packed_rhs` (CPUConvolutionPackedFilter.cpp reads the panels
// in place). A filter that changes per call, or of fewer than kMinPackedFilterDepth taps
// (except on output planes of at most kTinyPlanePositions positions), keeps the convolution
// as it was; over an output plane of run-time extents (a dynamic export's, where either may
// win) it gets both: the packed filter as one more capture, read through an unpack that also
// takes the original filter as a second input, and CPUConvolutionKernel.cpp chooses at run
// time (the packed kernel on a tiny plane, the input-packing one on the original otherwise).
//
// Before hexir-lift-constant-dispatches: a pack of a constant %w has only constant operands
// and moves into the initializer; a pack of a parameter into the function's parameter
// transforms. A pack goes before the outermost loop %w does not depend
// on (LICM ran before this pass). The layout and the marks: CPUMatmulMicroKernel.cpp
// ("prepacked right-hand sides"), which lowers both generics once bufferized.
//
// Declared without a header (hexir::compiler's Pipeline.cpp declares the two functions at
// the end of this file): a new header under passes/ makes Bazel recompile all of //passes.
#include "dialects/hexir/IR/HexirAttributes.h"
#include <memory>
#include <string>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/Pass.h"
#include "passes/codegen/CPUConvolutionKernel.h"
#include "passes/codegen/CPUMatmulMicroKernel.h"
#include "passes/codegen/CPUTarget.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/dispatch/LoadTimeValues.h"

namespace hexir {
namespace codegen {
bool WorthPackingRhs(int64_t m, int64_t n, int64_t k);  // CPUDistributeWorkgroups.cpp
}  // namespace codegen

namespace {
using namespace mlir;

// ceil(n / nr) panels of k x nr f32.
RankedTensorType PackedRhsType(MLIRContext* ctx, int64_t k, int64_t n, int64_t nr) {
  return RankedTensorType::get({(n + nr - 1) / nr, k, nr}, Float32Type::get(ctx));
}

// Bp = pack(rhs) into `out` (PackedRhsType of rhs's static shape).
Value BuildPackRhs(OpBuilder& b, Location loc, Value rhs, Value out) {
  auto outType = cast<RankedTensorType>(out.getType());
  const int64_t nr = outType.getDimSize(2);
  const int64_t n = cast<RankedTensorType>(rhs.getType()).getDimSize(1);
  AffineMap identity = b.getMultiDimIdentityMap(3);
  SmallVector<utils::IteratorType> parallel(3, utils::IteratorType::parallel);
  // Bp[p][k][j] = p * NR + j < N ? B[k][p * NR + j] : 0 (the read clamped to column 0).
  auto pack = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{}, ValueRange{out}, ArrayRef<AffineMap>{identity},
      parallel, [&](OpBuilder& nb, Location l, ValueRange) {
        auto loop = [&](uint64_t d) -> Value { return linalg::IndexOp::create(nb, l, d); };
        Value p = loop(0), k = loop(1), j = loop(2);
        Value column = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, p, arith::ConstantIndexOp::create(nb, l, nr)), j);
        Value inside = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, column,
                                             arith::ConstantIndexOp::create(nb, l, n));
        Value read = arith::SelectOp::create(nb, l, inside, column,
                                             arith::ConstantIndexOp::create(nb, l, 0));
        Value v = tensor::ExtractOp::create(nb, l, rhs, ValueRange{k, read});
        Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f));
        linalg::YieldOp::create(nb, l, ValueRange{arith::SelectOp::create(nb, l, inside, v, zero)});
      });
  pack->setAttr(kPackRhsAttr, b.getUnitAttr());
  return pack.getResult(0);
}

// B = unpack(packed) as a tensor<k x n x f32>.
Value BuildUnpackRhs(OpBuilder& b, Location loc, Value packed, int64_t k, int64_t n) {
  const int64_t nr = cast<RankedTensorType>(packed.getType()).getDimSize(2);
  MLIRContext* ctx = b.getContext();
  AffineExpr row = getAffineDimExpr(0, ctx), column = getAffineDimExpr(1, ctx);
  AffineMap read = AffineMap::get(2, 0, {column.floorDiv(nr), row, column % nr}, ctx);
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{k, n}, b.getF32Type());
  auto unpack = linalg::GenericOp::create(
      b, loc, TypeRange{empty.getType()}, ValueRange{packed}, ValueRange{empty},
      ArrayRef<AffineMap>{read, b.getMultiDimIdentityMap(2)}, parallel,
      [&](OpBuilder& nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, ValueRange{args[0]});
      });
  unpack->setAttr(kPackedRhsAttr, b.getUnitAttr());
  return unpack.getResult(0);
}

// Bp = pack(w) into `out` (PackedRhsType of K x F): Bp[p][k][j] = w[p * NR + j][k] (zero past
// F), k = (c * KH + kh) * KW + kw.
Value BuildPackFilter(OpBuilder& b, Location loc, Value w, Value out) {
  auto outType = cast<RankedTensorType>(out.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  const int64_t nr = outType.getDimSize(2), f = wType.getDimSize(0);
  const int64_t kh = wType.getDimSize(2), kw = wType.getDimSize(3);
  AffineMap identity = b.getMultiDimIdentityMap(3);
  SmallVector<utils::IteratorType> parallel(3, utils::IteratorType::parallel);
  auto pack = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{}, ValueRange{out}, ArrayRef<AffineMap>{identity},
      parallel, [&](OpBuilder& nb, Location l, ValueRange) {
        auto loop = [&](uint64_t d) -> Value { return linalg::IndexOp::create(nb, l, d); };
        auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, l, v); };
        Value p = loop(0), k = loop(1), j = loop(2);
        Value filter = arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, p, index(nr)), j);
        Value inside = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, filter, index(f));
        Value read = arith::SelectOp::create(nb, l, inside, filter, index(0));
        Value channel = arith::DivUIOp::create(nb, l, k, index(kh * kw));
        Value tap = arith::RemUIOp::create(nb, l, k, index(kh * kw));
        Value row = arith::DivUIOp::create(nb, l, tap, index(kw));
        Value column = arith::RemUIOp::create(nb, l, tap, index(kw));
        Value v = tensor::ExtractOp::create(nb, l, w, ValueRange{read, channel, row, column});
        Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f));
        linalg::YieldOp::create(nb, l, ValueRange{arith::SelectOp::create(nb, l, inside, v, zero)});
      });
  return pack.getResult(0);
}

// w = unpack(packed) as a tensor<F x C x KH x KW x f32> (`wType`). With `original` (w
// itself), a dual unpack: w is its second input too, which its body does not read; the
// convolution's kernel reads it there when it chooses the input-packing kernel at run time
// (codegen::DualUnpackOriginal).
Value BuildUnpackFilter(OpBuilder& b, Location loc, Value packed, RankedTensorType wType,
                        Value original = Value()) {
  const int64_t nr = cast<RankedTensorType>(packed.getType()).getDimSize(2);
  const int64_t kh = wType.getDimSize(2), kw = wType.getDimSize(3);
  MLIRContext* ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  AffineMap read = AffineMap::get(4, 0, {d(0).floorDiv(nr), d(1) * (kh * kw) + d(2) * kw + d(3), d(0) % nr}, ctx);
  SmallVector<Value> inputs = {packed};
  SmallVector<AffineMap> maps = {read};
  if (original) {
    inputs.push_back(original);
    maps.push_back(b.getMultiDimIdentityMap(4));
  }
  maps.push_back(b.getMultiDimIdentityMap(4));
  SmallVector<utils::IteratorType> parallel(4, utils::IteratorType::parallel);
  Value empty = tensor::EmptyOp::create(b, loc, wType.getShape(), wType.getElementType());
  auto unpack = linalg::GenericOp::create(
      b, loc, TypeRange{wType}, inputs, ValueRange{empty}, maps, parallel,
      [&](OpBuilder& nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, ValueRange{args[0]});
      });
  unpack->setAttr(kPackedRhsAttr, b.getUnitAttr());
  return unpack.getResult(0);
}

// Filters of fewer taps (C * KH * KW) keep the input-packing convolution kernel: there the
// packed filter's kernel spends more on gathering and scattering its NCHW output tiles than
// on its K multiply-adds per output (measured at load 10: 1x1 over 16-96 channels 2-10x
// slower, a 7x7 stem over 3 channels (147) 1.1-1.8x; 1x1 over 256 and 3x3 over 32 channels
// (288) 4-13x faster, 3x3 over 512 channels on 2 x 2 outputs 8x).
constexpr int64_t kMinPackedFilterDepth = 192;
// Except on output planes of at most codegen::kTinyPlanePositions positions
// (CPUConvolutionKernel.h; over a run-time plane, the kernel's choice at run time).
using codegen::kTinyPlanePositions;

// And except windows wider than 1x1 over at least this many channels: there the
// input-packing kernel gathers each of its panels tap by tap (an im2col), the packed filter
// reads x in place (SqueezeNet's 3x3 over 16 channels (144 taps) on 15 x 15 outputs, one
// thread: 100 -> 50 us; its 3x3 stem over 3 channels was no faster packed, 86 -> 87-91 us).
constexpr int64_t kMinPackedWindowChannels = 16;

// w[F][C][KH][KW] with KH x KW > 1 and C >= kMinPackedWindowChannels.
bool IsWideWindowOverChannels(RankedTensorType wType) {
  return wType.getDimSize(2) * wType.getDimSize(3) > 1 && wType.getDimSize(1) >= kMinPackedWindowChannels;
}

// A static output plane (out[n][f][oh][ow]) of at most kTinyPlanePositions positions.
bool HasTinyOutputPlane(linalg::GenericOp convolution) {
  auto out = cast<RankedTensorType>(convolution.getDpsInits()[0].getType());
  return !out.isDynamicDim(2) && !out.isDynamicDim(3) &&
         out.getDimSize(2) * out.getDimSize(3) <= kTinyPlanePositions;
}


// The dense convolutions of `kernel` (tensors) whose filter is a capture argument (one of the
// first `captures`) that nothing else reads, with that argument.
SmallVector<std::pair<linalg::GenericOp, BlockArgument>> FilterCaptures(func::FuncOp kernel, unsigned captures) {
  SmallVector<std::pair<linalg::GenericOp, BlockArgument>> found;
  Block& entry = kernel.getBody().front();
  kernel.walk([&](linalg::GenericOp op) {
    std::optional<codegen::ConvolutionGeometry> g =
        codegen::MatchConvolution(cast<linalg::LinalgOp>(op.getOperation()));
    if (!g || g->kind != codegen::ConvolutionKind::kDense || !op.hasPureTensorSemantics()) return;
    auto arg = dyn_cast<BlockArgument>(op.getDpsInputs()[1]);
    if (arg && arg.getOwner() == &entry && arg.getArgNumber() < captures && arg.hasOneUse())
      found.push_back({op, arg});
  });
  return found;
}

class CPUPackMatmulOperands : public PassWrapper<CPUPackMatmulOperands, OperationPass<ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CPUPackMatmulOperands)
  CPUPackMatmulOperands() = default;
  CPUPackMatmulOperands(const CPUPackMatmulOperands& other) : PassWrapper(other) {}
  explicit CPUPackMatmulOperands(StringRef target) { cpu = target.str(); }

  StringRef getArgument() const override { return "hexir-cpu-pack-matmul-operands"; }
  StringRef getDescription() const override {
    return "Packs the right-hand side of micro-kernel matmuls once per dispatch, or once at load";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect, arith::ArithDialect>();
  }

  Option<std::string> cpu{*this, "cpu", llvm::cl::desc("target CPU whose vector width sets NR"),
                          llvm::cl::init("host")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t nr = codegen::ChooseMatmulTiles(codegen::DescribeCPU(cpu)).columns();
    DenseMap<StringAttr, SmallVector<DispatchOp>> dispatches;
    module.walk([&](DispatchOp d) { dispatches[d.getExecutableAttr().getAttr()].push_back(d); });
    SmallVector<ExecutableOp> executables(module.getOps<ExecutableOp>());
    SymbolTable symbols(module);
    for (ExecutableOp exe : executables) {
      if (!exe.isCompiledFor("cpu") || !exe.getInnerModule()) continue;
      auto kernel = exe.getInnerModule().lookupSymbol<func::FuncOp>(exe.getSymName());
      SmallVector<DispatchOp> uses = dispatches.lookup(exe.getSymNameAttr());
      if (!kernel || kernel.getBody().empty() || uses.empty()) continue;
      codegen::NameMatmulGenerics(kernel);  // the ONNX importer's matmuls are generics
      // Kernel arguments (captures..., outputs..., scalars) start with the dispatch's tensors.
      unsigned captures = 0;
      for (Value v : uses.front().getArgs()) captures += isa<RankedTensorType>(v.getType()) ? 1 : 0;
      for (auto [arg, rhsType] : packArguments(kernel, captures, nr, uses)) {
        ExecutableOp pack = packExecutable(symbols, rhsType, nr);
        for (DispatchOp d : uses) packOperand(d, arg, pack, PackedRhsType(&getContext(), rhsType.getDimSize(0), rhsType.getDimSize(1), nr));
      }
      for (auto [arg, wType] : packFilters(kernel, captures, nr, uses)) {
        ExecutableOp pack = packFilterExecutable(symbols, wType, nr);
        for (DispatchOp d : uses) packOperand(d, arg, pack, FilterPackedType(wType, nr));
      }
      for (auto [arg, wType, at] : dualFilters(kernel, captures, nr, uses)) {
        ExecutableOp pack = packFilterExecutable(symbols, wType, nr);
        for (DispatchOp d : uses) addPackedOperand(d, arg, at, pack, FilterPackedType(wType, nr));
      }
    }
  }

 private:
  // Rewrites each matmul of `kernel` that the micro-kernel takes and whose B is a capture
  // argument of static shape read only by it, known at load at every dispatch or worth a pack
  // dispatch (codegen::WorthPackingRhs); returns (argument, B's type) of each.
  SmallVector<std::pair<unsigned, RankedTensorType>> packArguments(func::FuncOp kernel,
                                                                   unsigned captures, int64_t nr,
                                                                   ArrayRef<DispatchOp> uses) {
    SmallVector<std::pair<unsigned, RankedTensorType>> packed;
    Block& entry = kernel.getBody().front();
    SmallVector<linalg::MatmulOp> matmuls;
    kernel.walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls) {
      if (!op.hasPureTensorSemantics() ||
          !codegen::TakesMatmulMicroKernel(cast<linalg::LinalgOp>(op.getOperation())))
        continue;
      auto arg = dyn_cast<BlockArgument>(op.getDpsInputs()[1]);
      if (!arg || arg.getOwner() != &entry || arg.getArgNumber() >= captures || !arg.hasOneUse())
        continue;
      auto rhsType = cast<RankedTensorType>(arg.getType());
      if (!rhsType.hasStaticShape()) continue;
      const int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
      const int64_t m = cast<RankedTensorType>(op.getDpsInits()[0].getType()).getDimSize(0);
      bool atLoad = llvm::all_of(uses, [&](DispatchOp d) { return IsLoadTimeValue(d.getArgs()[arg.getArgNumber()]); });
      if (!atLoad && !codegen::WorthPackingRhs(ShapedType::isDynamic(m) ? -1 : m, n, k)) continue;
      arg.setType(PackedRhsType(&getContext(), k, n, nr));
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      op.getDpsInputOperand(1)->set(BuildUnpackRhs(b, op.getLoc(), arg, k, n));
      packed.push_back({arg.getArgNumber(), rhsType});
    }
    if (!packed.empty())
      kernel.setFunctionType(FunctionType::get(&getContext(), entry.getArgumentTypes(),
                                               kernel.getResultTypes()));
    return packed;
  }

  // Rewrites each dense convolution of `kernel` whose filter is a capture argument of static
  // shape read only by it, known at load at every dispatch, with kMinPackedFilterDepth (any on a
  // tiny output plane or of a wide window over channels) to kMaxPackedFilterDepth taps;
  // returns (argument, w's type) of each.
  SmallVector<std::pair<unsigned, RankedTensorType>> packFilters(func::FuncOp kernel,
                                                                 unsigned captures, int64_t nr,
                                                                 ArrayRef<DispatchOp> uses) {
    SmallVector<std::pair<unsigned, RankedTensorType>> packed;
    Block& entry = kernel.getBody().front();
    for (auto [op, arg] : FilterCaptures(kernel, captures)) {
      auto wType = cast<RankedTensorType>(arg.getType());
      if (!wType.hasStaticShape() ||
          wType.getDimSize(1) * wType.getDimSize(2) * wType.getDimSize(3) > codegen::kMaxPackedFilterDepth ||
          (wType.getDimSize(1) * wType.getDimSize(2) * wType.getDimSize(3) < kMinPackedFilterDepth &&
           !HasTinyOutputPlane(op) && !IsWideWindowOverChannels(wType)) ||
          !llvm::all_of(uses, [&](DispatchOp d) { return IsLoadTimeValue(d.getArgs()[arg.getArgNumber()]); }))
        continue;
      arg.setType(FilterPackedType(wType, nr));
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      op.getDpsInputOperand(1)->set(BuildUnpackFilter(b, op.getLoc(), arg, wType));
      packed.push_back({arg.getArgNumber(), wType});
    }
    if (!packed.empty())
      kernel.setFunctionType(FunctionType::get(&getContext(), entry.getArgumentTypes(),
                                               kernel.getResultTypes()));
    return packed;
  }

  // Gives each dense convolution of `kernel` over an output plane of run-time extents whose
  // filter is a capture argument of static shape read only by it, known at load at every dispatch,
  // of fewer than kMinPackedFilterDepth taps (and not a wide window over channels, which
  // packFilters took) a packed copy of it as a new capture argument, inserted after the
  // captures (and the earlier ones'), read through a dual unpack; returns (filter argument,
  // w's type, the new argument's index) of each.
  SmallVector<std::tuple<unsigned, RankedTensorType, unsigned>> dualFilters(func::FuncOp kernel,
                                                                          unsigned captures, int64_t nr,
                                                                          ArrayRef<DispatchOp> uses) {
    SmallVector<std::tuple<unsigned, RankedTensorType, unsigned>> duals;
    Block& entry = kernel.getBody().front();
    for (auto [op, arg] : FilterCaptures(kernel, captures)) {
      auto wType = cast<RankedTensorType>(arg.getType());
      auto out = cast<RankedTensorType>(op.getDpsInits()[0].getType());
      if (!wType.hasStaticShape() || (!out.isDynamicDim(2) && !out.isDynamicDim(3)) ||
          wType.getDimSize(1) * wType.getDimSize(2) * wType.getDimSize(3) >= kMinPackedFilterDepth ||
          IsWideWindowOverChannels(wType) ||
          !llvm::all_of(uses, [&](DispatchOp d) { return IsLoadTimeValue(d.getArgs()[arg.getArgNumber()]); }))
        continue;
      const unsigned at = captures + static_cast<unsigned>(duals.size());
      BlockArgument packed = entry.insertArgument(at, FilterPackedType(wType, nr), op.getLoc());
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      op.getDpsInputOperand(1)->set(BuildUnpackFilter(b, op.getLoc(), packed, wType, arg));
      duals.push_back({arg.getArgNumber(), wType, at});
    }
    if (!duals.empty())
      kernel.setFunctionType(FunctionType::get(&getContext(), entry.getArgumentTypes(),
                                               kernel.getResultTypes()));
    return duals;
  }

  RankedTensorType FilterPackedType(RankedTensorType wType, int64_t nr) {
    int64_t k = wType.getDimSize(1) * wType.getDimSize(2) * wType.getDimSize(3);
    return PackedRhsType(&getContext(), k, wType.getDimSize(0), nr);
  }

  // The executable packing a filter of `wType`, created on first use.
  ExecutableOp packFilterExecutable(SymbolTable& symbols, RankedTensorType wType, int64_t nr) {
    std::string name = "pack_filter_";
    for (int64_t i = 0; i < 4; ++i) name += (i ? "x" : "") + std::to_string(wType.getDimSize(i));
    name += "_" + std::to_string(nr);
    if (auto exe = symbols.lookup<ExecutableOp>(name)) return exe;
    return createPackExecutable(symbols, name, wType, FilterPackedType(wType, nr), BuildPackFilter);
  }

  // The executable `name`: a kernel (in: `inType`, out: `packedType`) -> build(in, out).
  ExecutableOp createPackExecutable(SymbolTable& symbols, StringRef name, RankedTensorType inType,
                                    RankedTensorType packedType,
                                    function_ref<Value(OpBuilder&, Location, Value, Value)> build) {
    ModuleOp module = getOperation();
    Location loc = module.getLoc();
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto exe = ExecutableOp::create(b, loc, name);
    exe.getBody().push_back(new Block());
    b.setInsertionPointToStart(&exe.getBody().front());
    auto inner = ModuleOp::create(b, loc);
    b.setInsertionPointToStart(inner.getBody());
    auto kernel = func::FuncOp::create(b, loc, name, b.getFunctionType({inType, packedType}, {packedType}));
    Block* entry = kernel.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value result = build(b, loc, entry->getArgument(0), entry->getArgument(1));
    func::ReturnOp::create(b, loc, result);
    symbols.insert(exe);
    return exe;
  }

  // The executable packing a B of `rhsType`, created on first use.
  ExecutableOp packExecutable(SymbolTable& symbols, RankedTensorType rhsType, int64_t nr) {
    const int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
    std::string name = "pack_rhs_" + std::to_string(k) + "x" + std::to_string(n) + "x" + std::to_string(nr);
    if (auto exe = symbols.lookup<ExecutableOp>(name)) return exe;
    return createPackExecutable(symbols, name, rhsType, PackedRhsType(&getContext(), k, n, nr),
                                BuildPackRhs);
  }

  // A pack dispatch on `d`'s operand `arg`, before the outermost loop that operand does not
  // depend on; its result.
  Value packDispatch(DispatchOp d, unsigned arg, ExecutableOp pack, RankedTensorType packedType) {
    Value rhs = d.getArgs()[arg];
    Operation* at = d;
    while (auto loop = dyn_cast_or_null<LoopLikeOpInterface>(at->getParentOp())) {
      if (!loop.isDefinedOutsideOfLoop(rhs)) break;
      at = loop;
    }
    OpBuilder b(at);
    auto packed = DispatchOp::create(
        b, d.getLoc(),
        TypeRange{packedType},
        FlatSymbolRefAttr::get(pack.getSymNameAttr()), ValueRange{rhs});
    if (Attribute device = d->getAttr(kDeviceAttr)) packed->setAttr(kDeviceAttr, device);
    return packed.getResult(0);
  }

  // `d`'s operand `arg` becomes the result of a pack dispatch on it.
  void packOperand(DispatchOp d, unsigned arg, ExecutableOp pack, RankedTensorType packedType) {
    d->setOperand(arg, packDispatch(d, arg, pack, packedType));
  }

  // `d` gets the result of a pack dispatch on its operand `arg` as a new operand at `at`
  // (after its tensors); results tied to operands at or past `at` follow them.
  void addPackedOperand(DispatchOp d, unsigned arg, unsigned at, ExecutableOp pack,
                        RankedTensorType packedType) {
    SmallVector<Value> args(d.getArgs());
    args.insert(args.begin() + at, packDispatch(d, arg, pack, packedType));
    d.getArgsMutable().assign(args);
    if (auto tied = d->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr)) {
      SmallVector<int64_t> shifted(tied.asArrayRef());
      for (int64_t& operand : shifted)
        if (operand >= static_cast<int64_t>(at)) ++operand;
      d->setAttr(kTiedOperandsAttr, DenseI64ArrayAttr::get(d.getContext(), shifted));
    }
  }
};

}  // namespace

std::unique_ptr<Pass> CreateCPUPackMatmulOperands(StringRef cpu) {
  return std::make_unique<CPUPackMatmulOperands>(cpu);
}
void RegisterCPUPackMatmulOperands() { PassRegistration<CPUPackMatmulOperands>(); }

}  // namespace hexir
