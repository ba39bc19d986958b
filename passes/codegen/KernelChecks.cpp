// Why the checks look like this (contract in KernelChecks.h): a clamped read or divisor keeps
// the kernel branch-free on the hot path (a select; the report is a never-taken branch that
// LLVM moves out of loops when the index is loop-invariant, as for an embedding row), and
// only indices that come from data pay for it: loop variables and linalg.index are in range
// by construction of the loops.
#include "passes/codegen/KernelChecks.h"

#include "hal/kernel_status.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// Whether `v` may hold a value that came from data rather than from the loop structure.
class DataDependence {
 public:
  explicit DataDependence(Value workgroupId) : workgroupId(workgroupId) {}

  bool operator()(Value v) {
    auto it = memo.find(v);
    if (it != memo.end()) return it->second;
    memo[v] = false;  // no cycles in SSA outside block arguments, which are leaves here
    bool data = compute(v);
    memo[v] = data;
    return data;
  }

 private:
  bool compute(Value v) {
    if (v == workgroupId) return false;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      // Elements of a linalg op's operands and host scalars are data; loop variables are not.
      Operation* owner = arg.getOwner()->getParentOp();
      return isa<linalg::LinalgOp, func::FuncOp>(owner);
    }
    Operation* def = v.getDefiningOp();
    if (matchPattern(v, m_Constant()) || isa<linalg::IndexOp, tensor::DimOp, memref::DimOp>(def))
      return false;
    if (isa<tensor::ExtractOp, memref::LoadOp>(def) || def->getNumRegions() != 0) return true;
    for (Value operand : def->getOperands())
      if ((*this)(operand)) return true;
    return false;
  }

  Value workgroupId;
  DenseMap<Value, bool> memo;
};

Value toI64(OpBuilder& b, Location loc, Value v) {
  Type i64 = b.getI64Type();
  if (v.getType().isIndex()) return arith::IndexCastOp::create(b, loc, i64, v);
  if (v.getType().getIntOrFloatBitWidth() < 64) return arith::ExtSIOp::create(b, loc, i64, v);
  return v;
}

class Checker {
 public:
  Checker(func::FuncOp kernel, bool report) : kernel(kernel), report(report) {}

  // In `report` mode: if (bad) hexir_kernel_error(code, a, b).
  void reportIf(OpBuilder& b, Location loc, Value bad, int32_t code, Value a, Value c) {
    if (!report) return;
    func::FuncOp callee = errorFunction();
    auto ifOp = scf::IfOp::create(b, loc, bad, /*withElseRegion=*/false);
    OpBuilder inside = ifOp.getThenBodyBuilder();
    Value codeValue = arith::ConstantIntOp::create(inside, loc, inside.getI32Type(), code);
    func::CallOp::create(inside, loc, callee,
                         ValueRange{codeValue, toI64(inside, loc, a), toI64(inside, loc, c)});
  }

  void checkExtract(tensor::ExtractOp extract, DataDependence& isData) {
    OpBuilder b(extract);
    Location loc = extract.getLoc();
    for (auto [k, index] : llvm::enumerate(extract.getIndices())) {
      if (!isData(index)) continue;
      Value extent = tensor::DimOp::create(b, loc, extract.getTensor(), k);
      Value bad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, index, extent);
      reportIf(b, loc, bad, HEXIR_KERNEL_INDEX_OUT_OF_RANGE, index, extent);
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value safe = arith::SelectOp::create(b, loc, bad, zero, index);
      extract.getIndicesMutable()[k].assign(safe);
    }
  }

  void checkDivision(Operation* op, bool isSigned) {
    Value dividend = op->getOperand(0), divisor = op->getOperand(1);
    Type t = divisor.getType();
    if (!t.isSignlessIntOrIndex()) return;  // vectors do not occur in bodies here
    APInt constant;
    if (matchPattern(divisor, m_ConstantInt(&constant)) && !constant.isZero() &&
        !(isSigned && constant.isAllOnes()))
      return;
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto intConstant = [&](int64_t v) -> Value {
      return t.isIndex() ? Value(arith::ConstantIndexOp::create(b, loc, v))
                         : Value(arith::ConstantIntOp::create(b, loc, t, v));
    };
    Value zero = intConstant(0), one = intConstant(1);
    Value byZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, divisor, zero);
    reportIf(b, loc, byZero, HEXIR_KERNEL_DIVISION_BY_ZERO, dividend, divisor);
    Value bad = byZero;
    if (isSigned) {
      unsigned width = t.isIndex() ? 64 : t.getIntOrFloatBitWidth();
      Value min = t.isIndex()
                      ? Value(arith::ConstantIndexOp::create(b, loc, INT64_MIN))
                      : Value(arith::ConstantOp::create(
                            b, loc, b.getIntegerAttr(t, APInt::getSignedMinValue(width))));
      Value minusOne = intConstant(-1);
      Value overflow = arith::AndIOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dividend, min),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, divisor, minusOne));
      reportIf(b, loc, overflow, HEXIR_KERNEL_DIVISION_OVERFLOW, dividend, divisor);
      bad = arith::OrIOp::create(b, loc, bad, overflow);
    }
    op->setOperand(1, arith::SelectOp::create(b, loc, bad, one, divisor));
  }

 private:
  func::FuncOp errorFunction() {
    if (callee) return callee;
    auto module = kernel->getParentOfType<ModuleOp>();
    callee = module.lookupSymbol<func::FuncOp>(kKernelErrorFunction);
    if (callee) return callee;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    auto type = b.getFunctionType({b.getI32Type(), b.getI64Type(), b.getI64Type()}, {});
    callee = func::FuncOp::create(b, kernel.getLoc(), kKernelErrorFunction, type);
    callee.setPrivate();
    return callee;
  }

  func::FuncOp kernel;
  bool report;
  func::FuncOp callee;
};

}  // namespace

void InsertKernelChecks(func::FuncOp kernel, bool report, Value workgroupId) {
  DataDependence isData(workgroupId);
  Checker checker(kernel, report);
  SmallVector<tensor::ExtractOp> extracts;
  SmallVector<std::pair<Operation*, bool>> divisions;
  kernel.walk([&](Operation* op) {
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) extracts.push_back(extract);
    if (!op->getParentOfType<linalg::LinalgOp>()) return;
    if (isa<arith::DivSIOp, arith::RemSIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(op))
      divisions.push_back({op, true});
    else if (isa<arith::DivUIOp, arith::RemUIOp, arith::CeilDivUIOp>(op))
      divisions.push_back({op, false});
  });
  for (tensor::ExtractOp extract : extracts) checker.checkExtract(extract, isData);
  for (auto [op, isSigned] : divisions) checker.checkDivision(op, isSigned);
}

namespace {

// CPU: the first failure of the workgroup is kept (the record starts zeroed), so the error
// names the first bad element of its tile whatever the tile size.
void storeWorkgroupRecord(OpBuilder& b, Location loc, Value record, Value code32, Value a,
                          Value c) {
  Type i8 = b.getI8Type(), i64 = b.getI64Type();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value code = LLVM::ZExtOp::create(b, loc, i64, code32);
  Value words[3] = {code, a, c};
  Value previous = LLVM::LoadOp::create(b, loc, i64, record);
  Value first = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, previous,
                                     LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0)));
  for (int i = 0; i < 3; ++i) {
    Value at = LLVM::GEPOp::create(b, loc, ptr, i8, record, ArrayRef<LLVM::GEPArg>{8 * i});
    Value kept = i == 0 ? previous : LLVM::LoadOp::create(b, loc, i64, at).getResult();
    LLVM::StoreOp::create(b, loc, LLVM::SelectOp::create(b, loc, first, words[i], kept), at);
  }
}

// CUDA: threads of the whole grid share the record. cmpxchg(code, 0, code) claims it; the
// winner stores its values, the losers store theirs into the scratch word (no branch).
void storeDispatchStatus(OpBuilder& b, Location loc, Value record, Value code32, Value a,
                         Value c) {
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  auto claim = LLVM::AtomicCmpXchgOp::create(b, loc, record, zero, code32,
                                             LLVM::AtomicOrdering::monotonic,
                                             LLVM::AtomicOrdering::monotonic);
  Value won = LLVM::ExtractValueOp::create(b, loc, claim, ArrayRef<int64_t>{1});
  auto at = [&](int32_t offset) -> Value {
    return LLVM::GEPOp::create(b, loc, ptr, i8, record, ArrayRef<LLVM::GEPArg>{offset});
  };
  Value scratch = at(HEXIR_KERNEL_STATUS_SCRATCH_OFFSET);
  Value values[2] = {a, c};
  for (int i = 0; i < 2; ++i) {
    Value slot = LLVM::SelectOp::create(b, loc, won, at(HEXIR_KERNEL_STATUS_VALUES_OFFSET + 8 * i),
                                        scratch);
    LLVM::StoreOp::create(b, loc, values[i], slot);
  }
}

}  // namespace

bool LowerKernelErrorCalls(Operation* symbolTable, LLVM::LLVMFuncOp impl, ErrorRecord kind) {
  auto callee = dyn_cast_or_null<LLVM::LLVMFuncOp>(
      SymbolTable::lookupSymbolIn(symbolTable, kKernelErrorFunction));
  if (!callee) return false;
  SmallVector<LLVM::CallOp> calls;
  impl.walk([&](LLVM::CallOp call) {
    if (call.getCallee() == StringRef(kKernelErrorFunction)) calls.push_back(call);
  });
  if (calls.empty()) {
    callee.erase();
    return false;
  }
  MLIRContext* ctx = impl.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  LLVM::LLVMFunctionType type = impl.getFunctionType();
  SmallVector<Type> params(type.getParams());
  params.push_back(ptr);
  impl.setFunctionTypeAttr(TypeAttr::get(
      LLVM::LLVMFunctionType::get(type.getReturnType(), params, type.isVarArg())));
  if (ArrayAttr attrs = impl.getArgAttrsAttr()) {
    SmallVector<Attribute> all(attrs.begin(), attrs.end());
    all.push_back(DictionaryAttr::get(ctx));
    impl.setArgAttrsAttr(ArrayAttr::get(ctx, all));
  }
  Value record = impl.getBody().front().addArgument(ptr, impl.getLoc());
  for (LLVM::CallOp call : calls) {
    OpBuilder b(call);
    Value code = call.getOperand(0), a = call.getOperand(1), c = call.getOperand(2);
    if (kind == ErrorRecord::kWorkgroup)
      storeWorkgroupRecord(b, call.getLoc(), record, code, a, c);
    else
      storeDispatchStatus(b, call.getLoc(), record, code, a, c);
    call.erase();
  }
  callee.erase();
  return true;
}

}  // namespace hexir::codegen
