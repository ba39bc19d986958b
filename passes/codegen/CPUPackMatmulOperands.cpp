// Packs the right-hand side of micro-kernel matmuls once per dispatch instead of once per
// workgroup, and a constant one once at load (the layout: CPUMatmulMicroKernel.cpp).
//
//   exe @mm: func @mm(%a, %b: tensor<KxN>, %o)          exe @pack_rhs_KxNxNR: Bp = pack(%b)
//     linalg.matmul ins(%a, %b) ...               =>    exe @mm: func @mm(%a, %bp: tensor<PxKxNR>, %o)
//   host: hexir.dispatch @mm(%x, %w)                       %b = unpack(%bp) {hexir.packed_rhs}
//                                                          linalg.matmul ins(%a, %b) ...
//                                                    host: %wp = hexir.dispatch @pack_rhs_KxNxNR(%w)
//                                                          hexir.dispatch @mm(%x, %wp)
//
// Before hexir-lift-constant-dispatches: a pack of a constant %w has only constant operands
// and moves into the initializer. A pack goes before the outermost loop %w does not depend
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
#include "passes/codegen/CPUMatmulMicroKernel.h"
#include "passes/codegen/CPUTarget.h"

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


// A module constant, a global (lifted earlier) or a static reshape of one.
bool IsConstant(Value v) {
  Operation* def = v.getDefiningOp();
  if (!def) return false;
  if (isa<GlobalLoadOp, arith::ConstantOp>(def)) return true;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(def))
    return IsConstant(def->getOperand(0));
  return false;
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
      // Kernel arguments (captures..., outputs..., scalars) start with the dispatch's tensors.
      unsigned captures = 0;
      for (Value v : uses.front().getArgs()) captures += isa<RankedTensorType>(v.getType()) ? 1 : 0;
      for (auto [arg, rhsType] : packArguments(kernel, captures, nr, uses)) {
        ExecutableOp pack = packExecutable(symbols, rhsType, nr);
        for (DispatchOp d : uses) packOperand(d, arg, pack, nr);
      }
    }
  }

 private:
  // Rewrites each matmul of `kernel` that the micro-kernel takes and whose B is a capture
  // argument of static shape read only by it, constant at every dispatch or worth a pack
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
      bool constant = llvm::all_of(uses, [&](DispatchOp d) { return IsConstant(d.getArgs()[arg.getArgNumber()]); });
      if (!constant && !codegen::WorthPackingRhs(ShapedType::isDynamic(m) ? -1 : m, n, k)) continue;
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

  // The executable packing a B of `rhsType`, created on first use.
  ExecutableOp packExecutable(SymbolTable& symbols, RankedTensorType rhsType, int64_t nr) {
    const int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
    std::string name = "pack_rhs_" + std::to_string(k) + "x" + std::to_string(n) + "x" + std::to_string(nr);
    if (auto exe = symbols.lookup<ExecutableOp>(name)) return exe;
    ModuleOp module = getOperation();
    Location loc = module.getLoc();
    RankedTensorType packedType = PackedRhsType(&getContext(), k, n, nr);
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto exe = ExecutableOp::create(b, loc, name);
    exe.getBody().push_back(new Block());
    b.setInsertionPointToStart(&exe.getBody().front());
    auto inner = ModuleOp::create(b, loc);
    b.setInsertionPointToStart(inner.getBody());
    auto kernel = func::FuncOp::create(b, loc, name,
                                       b.getFunctionType({rhsType, packedType}, {packedType}));
    Block* entry = kernel.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value result = BuildPackRhs(b, loc, entry->getArgument(0), entry->getArgument(1));
    func::ReturnOp::create(b, loc, result);
    symbols.insert(exe);
    return exe;
  }

  // `d`'s operand `arg` becomes the result of a pack dispatch on it.
  void packOperand(DispatchOp d, unsigned arg, ExecutableOp pack, int64_t nr) {
    Value rhs = d.getArgs()[arg];
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    Operation* at = d;
    while (auto loop = dyn_cast_or_null<LoopLikeOpInterface>(at->getParentOp())) {
      if (!loop.isDefinedOutsideOfLoop(rhs)) break;
      at = loop;
    }
    OpBuilder b(at);
    auto packed = DispatchOp::create(
        b, d.getLoc(),
        TypeRange{PackedRhsType(&getContext(), rhsType.getDimSize(0), rhsType.getDimSize(1), nr)},
        FlatSymbolRefAttr::get(pack.getSymNameAttr()), ValueRange{rhs});
    if (Attribute device = d->getAttr(kDeviceAttr)) packed->setAttr(kDeviceAttr, device);
    d->setOperand(arg, packed.getResult(0));
  }
};

}  // namespace

std::unique_ptr<Pass> CreateCPUPackMatmulOperands(StringRef cpu) {
  return std::make_unique<CPUPackMatmulOperands>(cpu);
}
void RegisterCPUPackMatmulOperands() { PassRegistration<CPUPackMatmulOperands>(); }

}  // namespace hexir
