// Weights of a one-block kernel fetched before the programmatic wait (CUDAStagedWeights.h).
#include "passes/codegen/CUDAStagedWeights.h"

#include "llvm/Support/MathExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace hexir::cuda {
using namespace mlir;

std::optional<WeightStaging> ParseWeightStaging(llvm::StringRef name) {
  if (name == "none") return WeightStaging::kNone;
  if (name == "shared") return WeightStaging::kShared;
  if (name == "l1") return WeightStaging::kL1;
  return std::nullopt;
}

namespace {

// Bytes of one cp.async (the widest), of one when a copy's bytes are not a multiple of it,
// and of an L1 line.
constexpr int64_t kCopyBytes = 16;
constexpr int64_t kNarrowCopyBytes = 4;
constexpr int64_t kLineBytes = 128;

// Whether the kernel reads every element of `v` and nothing else uses it: each use is a
// linalg input whose indexing map is a projected permutation with the loop ranges of v's
// shape, or an expand/collapse_shape whose result is read so (then *direct = false: a use
// that needs v's exact type).
bool ReadWhole(Value v, bool* direct, int depth = 0) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || depth > 8 || v.use_empty()) return false;
  for (OpOperand& use : v.getUses()) {
    Operation* user = use.getOwner();
    if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)) {
      *direct = false;
      if (!ReadWhole(user->getResult(0), direct, depth + 1)) return false;
      continue;
    }
    auto op = dyn_cast<linalg::LinalgOp>(user);
    if (!op || !op.isDpsInput(&use)) return false;
    AffineMap map = op.getMatchingIndexingMap(&use);
    if (!map.isProjectedPermutation() || map.getNumResults() != unsigned(type.getRank())) return false;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (unsigned j = 0; j < map.getNumResults(); ++j)
      if (ranges[map.getDimPosition(j)] != type.getDimSize(j)) return false;
  }
  return true;
}

// A copy's unit: 16 bytes when its rows are padded or its bytes a multiple of 16, else 4.
int64_t CopyUnit(const StagedWeight& w) {
  return (w.pitch != w.rowBytes || w.bytes() % kCopyBytes == 0) ? kCopyBytes : kNarrowCopyBytes;
}

// Makes the uses of `arg` read its copy `w` in the dynamic shared memory `dynamic` (a view at
// the builder). Linalg users (`direct`) take the shared memref itself (LLVM then sees shared
// addresses with the symbol's alignment, and merges a thread's adjacent loads); views of it
// need the argument's type, so they get it back through a memory-space cast.
void ReadSharedCopy(OpBuilder& b, BlockArgument arg, const StagedWeight& w, bool direct, Value dynamic) {
  Location loc = dynamic.getLoc();
  auto type = cast<MemRefType>(arg.getType());
  Attribute space = cast<MemRefType>(dynamic.getType()).getMemorySpace();
  Value offset = arith::ConstantIndexOp::create(b, loc, w.offset);
  Value view;
  if (w.pitch == w.rowBytes) {
    auto viewType = MemRefType::get(type.getShape(), type.getElementType(), MemRefLayoutAttrInterface(), space);
    view = memref::ViewOp::create(b, loc, viewType, dynamic, offset, ValueRange{});
  } else {
    const int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    auto padded = MemRefType::get({w.rows, w.pitch / elementBytes}, type.getElementType(),
                                  MemRefLayoutAttrInterface(), space);
    Value rows = memref::ViewOp::create(b, loc, padded, dynamic, offset, ValueRange{});
    view = memref::SubViewOp::create(b, loc, rows, ArrayRef<int64_t>{0, 0}, type.getShape(),
                                     ArrayRef<int64_t>{1, 1});
  }
  if (!direct) {
    auto viewType = cast<MemRefType>(view.getType());
    view = memref::MemorySpaceCastOp::create(
        b, loc, MemRefType::get(viewType.getShape(), viewType.getElementType(), viewType.getLayout()), view);
  }
  arg.replaceAllUsesWith(view);
}

}  // namespace

int64_t TopLevelAllocationBytes(func::FuncOp kernel) {
  int64_t bytes = 0;
  for (auto alloc : kernel.getBody().front().getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape()) continue;  // LowerBlockLevels refuses it
    bytes += llvm::alignTo(type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8), 16);
  }
  return bytes;
}

SmallVector<StagedWeight> StageWeights(func::FuncOp kernel, const llvm::DenseSet<int64_t>& readOnly,
                                       WeightStaging mode, int64_t maxBytes, int64_t* sharedBytes) {
  *sharedBytes = 0;
  SmallVector<StagedWeight> staged;
  if (mode == WeightStaging::kNone) return staged;
  OpBuilder b(kernel.getContext());
  b.setInsertionPointToStart(&kernel.getBody().front());
  Value dynamic;  // kShared: the kernel's dynamic shared memory, made with the first copy
  int64_t used = 0;
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
    if (!readOnly.contains(i)) continue;
    auto type = dyn_cast<MemRefType>(kernel.getArgument(i).getType());
    if (!type || type.getRank() == 0 || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getMemorySpace() || !type.getElementType().isIntOrFloat() ||
        type.getElementTypeBitWidth() % 8 != 0)
      continue;
    const int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    const int64_t rowBytes = type.getShape().back() * elementBytes;
    if (rowBytes == 0 || rowBytes % kNarrowCopyBytes != 0) continue;
    bool onlyLinalg = true;
    if (!ReadWhole(kernel.getArgument(i), &onlyLinalg)) continue;
    StagedWeight w{int64_t(i), type.getNumElements() / type.getShape().back(), rowBytes, rowBytes, 0};
    // Rows an even number of 16-byte units long put 8 rows' same 16 bytes in one bank group:
    // one more unit a row spreads them (the linalg users take any layout).
    if (mode == WeightStaging::kShared && onlyLinalg && type.getRank() == 2 && w.rows > 1 &&
        rowBytes % kCopyBytes == 0 && (rowBytes / kCopyBytes) % 2 == 0)
      w.pitch = rowBytes + kCopyBytes;
    const int64_t footprint = mode == WeightStaging::kShared ? llvm::alignTo(w.rows * w.pitch, kCopyBytes) : w.bytes();
    if (used + footprint > maxBytes) continue;
    w.offset = used;
    used += footprint;
    staged.push_back(w);
    if (mode != WeightStaging::kShared) continue;
    if (!dynamic) {
      auto space = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
      dynamic = gpu::DynamicSharedMemoryOp::create(
          b, kernel.getLoc(),
          MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(), space));
    }
    ReadSharedCopy(b, kernel.getArgument(i), w, onlyLinalg, dynamic);
  }
  if (mode == WeightStaging::kShared) *sharedBytes = used;
  return staged;
}

LogicalResult EmitWeightStaging(OpBuilder& b, Location loc, LLVM::LLVMFuncOp entry, gpu::GPUModuleOp module,
                                ArrayRef<StagedWeight> staged, WeightStaging mode, int64_t threads) {
  if (staged.empty() || mode == WeightStaging::kNone) return success();
  MLIRContext* ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto generic = LLVM::LLVMPointerType::get(ctx);
  auto global = LLVM::LLVMPointerType::get(ctx, 1);
  auto shared = LLVM::LLVMPointerType::get(ctx, 3);
  auto constant = [&](int64_t v) { return LLVM::ConstantOp::create(b, loc, i64, v).getResult(); };
  Value base;
  if (mode == WeightStaging::kShared) {
    // The symbol convert-gpu-to-nvvm gave the kernel's gpu.dynamic_shared_memory.
    LLVM::GlobalOp dynamic;
    for (auto g : module.getOps<LLVM::GlobalOp>()) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(g.getGlobalType());
      if (g.getAddrSpace() == 3 && array && array.getNumElements() == 0) dynamic = g;
    }
    if (!dynamic) return entry.emitError("internal: staged weights without dynamic shared memory");
    // convert-gpu-to-nvvm makes it internal, and NVPTX demotes an internal shared global to a
    // 1-byte static variable (`.shared .b8 x;`) among the kernel's other static arrays, which
    // copies past its first byte would overwrite. External, it is the launch's dynamic shared
    // memory (`.extern .shared .b8 x[];`), after every static array.
    dynamic.setLinkage(LLVM::Linkage::External);
    base = LLVM::AddressOfOp::create(b, loc, shared, dynamic.getSymName());
  }
  Value tid = LLVM::ZExtOp::create(b, loc, i64, NVVM::ThreadIdXOp::create(b, loc, b.getI32Type()));
  Region& body = entry.getBody();
  // for (i = tid; i < count; i += threads) emit(i)
  auto loop = [&](int64_t count, llvm::function_ref<void(Value)> emit) {
    Block* before = b.getInsertionBlock();
    Block* header = b.createBlock(&body, body.end(), {i64}, {loc});
    Block* step = b.createBlock(&body, body.end());
    Block* after = b.createBlock(&body, body.end());
    b.setInsertionPointToEnd(before);
    LLVM::BrOp::create(b, loc, ValueRange{tid}, header);
    b.setInsertionPointToStart(header);
    Value i = header->getArgument(0);
    LLVM::CondBrOp::create(b, loc, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, i, constant(count)),
                           step, after);
    b.setInsertionPointToStart(step);
    emit(i);
    LLVM::BrOp::create(b, loc, ValueRange{LLVM::AddOp::create(b, loc, i, constant(threads))}, header);
    b.setInsertionPointToStart(after);
  };
  for (const StagedWeight& w : staged) {
    Value source = entry.getArgument(w.binding);
    auto at = [&](Value offset) {
      Value p = LLVM::GEPOp::create(b, loc, generic, b.getI8Type(), source, ArrayRef<LLVM::GEPArg>{offset});
      return LLVM::AddrSpaceCastOp::create(b, loc, global, p).getResult();
    };
    if (mode == WeightStaging::kL1) {
      loop(llvm::divideCeil(w.bytes(), kLineBytes), [&](Value i) {
        NVVM::PrefetchOp::create(b, loc, NVVM::PrefetchCacheLevelAttr::get(ctx, NVVM::PrefetchCacheLevel::L1),
                                 NVVM::CacheEvictionPriorityAttr(), at(LLVM::MulOp::create(b, loc, i, constant(kLineBytes))),
                                 Value(), UnitAttr(), UnitAttr(), UnitAttr());
      });
      continue;
    }
    const int64_t unit = CopyUnit(w);
    loop(w.bytes() / unit, [&](Value i) {
      Value from = LLVM::MulOp::create(b, loc, i, constant(unit));
      Value to;
      if (w.pitch == w.rowBytes) {
        to = LLVM::AddOp::create(b, loc, from, constant(w.offset));
      } else {  // row i / units-a-row at pitch, unit i % units-a-row within it
        Value perRow = constant(w.rowBytes / unit);
        Value row = LLVM::UDivOp::create(b, loc, i, perRow);
        Value column = LLVM::URemOp::create(b, loc, i, perRow);
        to = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, row, constant(w.pitch)),
                                 LLVM::MulOp::create(b, loc, column, constant(unit)));
        to = LLVM::AddOp::create(b, loc, to, constant(w.offset));
      }
      Value destination = LLVM::GEPOp::create(b, loc, shared, b.getI8Type(), base, ArrayRef<LLVM::GEPArg>{to});
      NVVM::CpAsyncOp::create(b, loc, destination, at(from), unit,
                              unit == kCopyBytes ? NVVM::LoadCacheModifierKind::CG : NVVM::LoadCacheModifierKind::CA,
                              Value());
    });
  }
  if (mode == WeightStaging::kShared) NVVM::CpAsyncCommitGroupOp::create(b, loc);
  return success();
}

void EmitWeightStagingWait(OpBuilder& b, Location loc, ArrayRef<StagedWeight> staged, WeightStaging mode) {
  if (staged.empty() || mode != WeightStaging::kShared) return;  // no copies
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  NVVM::Barrier0Op::create(b, loc);
}

}  // namespace hexir::cuda
