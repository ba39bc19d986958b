// Emits the packed, register-blocked matmul described in CPUMatmulMicroKernel.h with the
// vector dialect: one vector.fma per (row, vector) of the register tile and k step, so the
// accumulators stay in registers and LLVM only allocates them.
#include "dialects/hexir/IR/HexirAttributes.h"
#include "passes/codegen/CPUMatmulMicroKernel.h"

#include <algorithm>
#include <optional>

#include "llvm/Support/CommandLine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CPUForLoop.h"
#include "passes/codegen/CPUUnitStride.h"

namespace hexir::codegen {
using namespace mlir;

namespace {
// Process-wide (hexir-compile and hexir-opt list it): A/B measurements vary it.
llvm::cl::opt<int64_t> cpuPanelPrefetchBytes(
    "cpu-panel-prefetch-bytes",
    llvm::cl::desc("CPU GEMMs of one register tile of static rows on prepacked panels prefetch "
                   "each panel N bytes ahead of the k step (passes/codegen/CPUMatmulMicroKernel.cpp); "
                   "<= 0: never (default 8192)"),
    llvm::cl::init(int64_t{8192}));
}  // namespace

MatmulTiles ChooseMatmulTiles(const CPUTarget& target) {
  MatmulTiles t;
  t.lanes = std::max<int64_t>(4, target.vectorBits / 32);
  t.vectors = 2;
  // Registers left after the B vectors of one k step and the broadcast A value.
  int64_t free = std::max<int64_t>(t.vectors, target.vectorRegisters - t.vectors - 1);
  t.rows = std::clamp<int64_t>(free / t.vectors, 1, 14);
  t.depth = std::max<int64_t>(16, target.l1Bytes / 2 / (t.columns() * 4) / 8 * 8);
  t.rowBlock = std::max<int64_t>(t.rows, target.l2Bytes / 4 / (t.depth * 4) / t.rows * t.rows);
  // The packed B block: half of L2 as well, at most 256 KiB of stack.
  int64_t blockBytes = std::min<int64_t>(target.l2Bytes / 2, 256 * 1024);
  t.blockColumns = std::max<int64_t>(1, blockBytes / (t.depth * 4) / t.columns()) * t.columns();
  return t;
}

bool TakesMatmulMicroKernel(linalg::LinalgOp op) {
  auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
  if (!matmul || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) return false;
  // The default maps only: (m, k), (k, n), (m, n).
  MLIRContext* ctx = op.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != 3 || maps[0] != AffineMap::get(3, 0, {m, k}, ctx) ||
      maps[1] != AffineMap::get(3, 0, {k, n}, ctx) || maps[2] != AffineMap::get(3, 0, {m, n}, ctx))
    return false;
  for (OpOperand& operand : op->getOpOperands()) {
    auto shaped = dyn_cast<ShapedType>(operand.get().getType());
    if (!shaped || shaped.getRank() != 2 || !shaped.getElementType().isF32()) return false;
  }
  // The body must be the plain multiply-add (no casts, no other combiner).
  Block& body = op->getRegion(0).front();
  if (body.getOperations().size() != 3 || !isa<arith::MulFOp>(body.front()) ||
      !isa<arith::AddFOp>(*std::next(body.begin())))
    return false;
  auto cType = cast<ShapedType>(op.getDpsInits()[0].getType());
  if (!ShapedType::isDynamic(cType.getDimSize(0)) &&
      cType.getDimSize(0) < kMatmulMicroKernelMinRows)
    return false;
  return HasUnitInnerStride(op.getDpsInputs()[1].getType()) &&
         HasUnitInnerStride(op.getDpsInits()[0].getType());
}

int NameMatmulGenerics(func::FuncOp kernel) {
  MLIRContext* ctx = kernel.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx), k = getAffineDimExpr(2, ctx);
  const SmallVector<AffineMap> defaults = {AffineMap::get(3, 0, {m, k}, ctx), AffineMap::get(3, 0, {k, n}, ctx),
                                           AffineMap::get(3, 0, {m, n}, ctx)};
  SmallVector<linalg::GenericOp> found;
  kernel.walk([&](linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
        op.getIndexingMapsArray() != defaults || op.getNumReductionLoops() != 1 || op.getNumLoops() != 3 ||
        op.getIteratorTypesArray()[2] != utils::IteratorType::reduction || !op->getDiscardableAttrDictionary().empty())
      return;
    for (Value v : op->getOperands())
      if (!cast<ShapedType>(v.getType()).getElementType().isF32()) return;
    // Rows of run-time extent only: a static M keeps the loop lowering, whose sums the
    // micro-kernel's would not match bit for bit where fusion decides differently (a
    // placement moving a matmul's producer out of its kernel: placement_test).
    if (!ShapedType::isDynamic(cast<ShapedType>(op.getDpsInits()[0].getType()).getDimSize(0))) return;
    // yield(out + a * b), either order of each operation's operands.
    Block& body = op.getRegion().front();
    if (body.getOperations().size() != 3) return;
    auto mul = dyn_cast<arith::MulFOp>(body.front());
    auto add = dyn_cast<arith::AddFOp>(*std::next(body.begin()));
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    if (!mul || !add || yield.getValues()[0] != add.getResult()) return;
    Value a = body.getArgument(0), bv = body.getArgument(1), acc = body.getArgument(2);
    const bool product = (mul.getLhs() == a && mul.getRhs() == bv) || (mul.getLhs() == bv && mul.getRhs() == a);
    const bool sum = (add.getLhs() == acc && add.getRhs() == mul.getResult()) ||
                     (add.getLhs() == mul.getResult() && add.getRhs() == acc);
    if (product && sum && mul.getFastmathAttr().getValue() == arith::FastMathFlags::none &&
        add.getFastmathAttr().getValue() == arith::FastMathFlags::none)
      found.push_back(op);
  });
  for (linalg::GenericOp op : found) {
    OpBuilder b(op);
    auto matmul = linalg::MatmulOp::create(b, op.getLoc(), op.getDpsInputs(), op.getDpsInits());
    op->replaceAllUsesWith(matmul->getResults());
    op->erase();
  }
  return static_cast<int>(found.size());
}

namespace {

// ---- prepacked right-hand sides --------------------------------------------------------
// hexir-cpu-pack-matmul-operands (CPUPackMatmulOperands.cpp) stores a matmul's B[K][N] as
// ceil(N/NR) panels of K x NR, Bp[p][k][j] = B[k][p * NR + j] (zero past N), written by a
// pack dispatch (a generic marked kPackRhsAttr) and read in the matmul's kernel through an
// unpack generic (marked kPackedRhsAttr, never fused into tile loops: KernelLoweringUtils).
// Both are exact computations (as loops they give the right answer); here, bufferized, the
// pack becomes vector copies and the unpack is replaced by reading Bp's panels in place.
// (The marks: dialects/hexir/IR/HexirAttributes.h.)

// Whether `v` is a multiple of `nr` by construction: a constant, a product with one, a sum
// of such, or the induction variable of a loop whose start and step are.
bool MultipleOf(Value v, int64_t nr, int depth = 0) {
  if (depth > 16) return false;
  if (std::optional<int64_t> c = getConstantIntValue(v)) return *c % nr == 0;
  if (auto mul = v.getDefiningOp<arith::MulIOp>())
    return MultipleOf(mul.getLhs(), nr, depth + 1) || MultipleOf(mul.getRhs(), nr, depth + 1);
  if (auto add = v.getDefiningOp<arith::AddIOp>())
    return MultipleOf(add.getLhs(), nr, depth + 1) && MultipleOf(add.getRhs(), nr, depth + 1);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto loop = dyn_cast_or_null<scf::ForOp>(arg.getOwner()->getParentOp());
    if (loop && loop.getInductionVar() == arg)
      return MultipleOf(loop.getLowerBound(), nr, depth + 1) && MultipleOf(loop.getStep(), nr, depth + 1);
  }
  return false;
}

// The marked generic writing `buffer`, if any.
linalg::GenericOp UnpackWriting(Value buffer) {
  for (Operation* user : buffer.getUsers()) {
    auto g = dyn_cast<linalg::GenericOp>(user);
    if (g && g->hasAttr(kPackedRhsAttr) && g.hasPureBufferSemantics() &&
        g.getDpsInits()[0] == buffer)
      return g;
  }
  return nullptr;
}

// FindPrepackedOperand's match, creating nothing: the panels and the first column.
struct PrepackedMatch {
  Value packed;
  OpFoldResult column;
  int64_t nr;
};
std::optional<PrepackedMatch> MatchPrepackedOperand(Value operand, unsigned columnDim, MLIRContext* context) {
  Value v = operand;
  OpFoldResult column = IntegerAttr::get(IndexType::get(context), 0);
  if (auto view = v.getDefiningOp<memref::SubViewOp>()) {
    // Whole extents from 0 (the op reads them from 0) in every dim but the columns'.
    if (!llvm::all_of(view.getMixedStrides(), [](OpFoldResult s) { return isConstantIntValue(s, 1); }))
      return std::nullopt;
    for (auto [i, offset] : llvm::enumerate(view.getMixedOffsets()))
      if (i != columnDim && !isConstantIntValue(offset, 0)) return std::nullopt;
    if (columnDim >= view.getMixedOffsets().size()) return std::nullopt;
    column = view.getMixedOffsets()[columnDim];
    v = view.getSource();
  }
  while (auto cast = v.getDefiningOp<memref::CastOp>()) v = cast.getSource();
  linalg::GenericOp unpack = UnpackWriting(v);
  if (!unpack) return std::nullopt;
  Value packed = unpack.getDpsInputs()[0];
  auto packedType = dyn_cast<MemRefType>(packed.getType());
  if (!packedType || packedType.getRank() != 3 || packedType.isDynamicDim(2)) return std::nullopt;
  const int64_t nr = packedType.getDimSize(2);
  if (std::optional<int64_t> c = getConstantIntValue(column)) {
    if (*c % nr != 0) return std::nullopt;
  } else if (!MultipleOf(cast<Value>(column), nr)) {
    return std::nullopt;
  }
  return PrepackedMatch{packed, column, nr};
}

}  // namespace

std::optional<int64_t> PrepackedOperandPanelWidth(Value operand, unsigned columnDim) {
  std::optional<PrepackedMatch> match = MatchPrepackedOperand(operand, columnDim, operand.getContext());
  if (!match) return std::nullopt;
  return match->nr;
}

std::optional<PrepackedB> FindPrepackedOperand(OpBuilder& b, Value operand, unsigned columnDim) {
  std::optional<PrepackedMatch> match = MatchPrepackedOperand(operand, columnDim, b.getContext());
  if (!match) return std::nullopt;
  Location loc = operand.getLoc();
  Value start = getValueOrCreateConstantIndexOp(b, loc, match->column);
  Value first = arith::DivUIOp::create(b, loc, start, arith::ConstantIndexOp::create(b, loc, match->nr));
  return PrepackedB{match->packed, first, match->nr};
}

namespace {

// The dual unpack `operand` is read through (a view of its buffer, or the buffer), if any.
linalg::GenericOp DualUnpackOf(Value operand) {
  Value v = operand;
  if (auto view = v.getDefiningOp<memref::SubViewOp>()) v = view.getSource();
  while (auto cast = v.getDefiningOp<memref::CastOp>()) v = cast.getSource();
  linalg::GenericOp unpack = UnpackWriting(v);
  return unpack && unpack.getNumDpsInputs() == 2 ? unpack : nullptr;
}

}  // namespace

bool HasDualUnpack(Value operand) { return DualUnpackOf(operand) != nullptr; }

Value DualUnpackOriginal(OpBuilder& b, Value operand) {
  linalg::GenericOp unpack = DualUnpackOf(operand);
  if (!unpack) return Value();
  auto view = operand.getDefiningOp<memref::SubViewOp>();
  Value original = unpack.getDpsInputs()[1];
  if (!view) return original;
  return memref::SubViewOp::create(b, operand.getLoc(), original, view.getMixedOffsets(), view.getMixedSizes(),
                                   view.getMixedStrides());
}

void ErasePrepackedOperands(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> unpacks;
  kernel.walk([&](linalg::GenericOp g) {
    if (g->hasAttr(kPackedRhsAttr) && g.hasPureBufferSemantics()) unpacks.push_back(g);
  });
  for (linalg::GenericOp g : unpacks) {
    Value buffer = g.getDpsInits()[0];
    bool read = false;
    SmallVector<Operation*> users(buffer.getUsers());
    for (Operation* user : users) {
      if (user == g.getOperation()) continue;
      if (isa<memref::SubViewOp, memref::CastOp>(user) && user->use_empty()) {
        user->erase();
        continue;
      }
      read = true;
    }
    if (read) continue;
    g.erase();
    if (auto alloc = buffer.getDefiningOp<memref::AllocOp>(); alloc && alloc->use_empty()) alloc.erase();
  }
}

namespace {

// Each bufferized pack generic becomes row-by-row vector copies of `lanes` f32 (masked past N):
// B's rows read in order, each panel's K x NR written densely.
void LowerPackRhsKernels(func::FuncOp kernel, int64_t lanes) {
  SmallVector<linalg::GenericOp> packs;
  kernel.walk([&](linalg::GenericOp g) {
    if (g->hasAttr(kPackRhsAttr) && g.hasPureBufferSemantics()) packs.push_back(g);
  });
  for (linalg::GenericOp g : packs) {
    // B is what the body reads (tensor.extract became memref.load of B's buffer).
    memref::LoadOp load;
    g.getRegion().walk([&](memref::LoadOp l) { load = l; });
    Value out = g.getDpsInits()[0];
    auto outType = dyn_cast<MemRefType>(out.getType());
    if (!load || !outType || outType.getRank() != 3 || outType.isDynamicDim(2) ||
        outType.getDimSize(2) % lanes != 0 || g.getRegion().isAncestor(load.getMemRef().getParentRegion()))
      continue;
    Value rhs = load.getMemRef();
    const int64_t nr = outType.getDimSize(2);
    OpBuilder b(g);
    Location loc = g.getLoc();
    auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    // The slice of panels this workgroup writes starts at panel `first` of the whole output.
    Value first = index(0);
    if (auto view = out.getDefiningOp<memref::SubViewOp>())
      first = getValueOrCreateConstantIndexOp(b, loc, view.getMixedOffsets()[0]);
    Value depth = memref::DimOp::create(b, loc, rhs, 0);
    Value columns = memref::DimOp::create(b, loc, rhs, 1);
    Value panels = memref::DimOp::create(b, loc, out, 0);
    auto vec = VectorType::get({lanes}, b.getF32Type());
    auto maskType = VectorType::get({lanes}, b.getI1Type());
    Value zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
    // Row k of B in order (one contiguous run across the panels), each panel's row k stored.
    auto rows = scf::ForOp::create(b, loc, index(0), depth, index(1));
    b.setInsertionPoint(rows.getBody()->getTerminator());
    Value k = rows.getInductionVar();
    auto each = scf::ForOp::create(b, loc, index(0), panels, index(1));
    b.setInsertionPoint(each.getBody()->getTerminator());
    Value p = each.getInductionVar();
    Value n0 = arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, first, p), index(nr));
    Value left = arith::SubIOp::create(b, loc, columns, n0);
    Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, left, index(nr));
    auto copy = [&](OpBuilder& nb, bool masked) {
      for (int64_t v = 0; v < nr / lanes; ++v) {
        Value column = arith::AddIOp::create(nb, loc, n0, index(v * lanes));
        Value x;
        if (masked) {
          Value mask = vector::CreateMaskOp::create(
              nb, loc, maskType, ValueRange{arith::SubIOp::create(nb, loc, left, index(v * lanes))});
          x = vector::MaskedLoadOp::create(nb, loc, vec, rhs, ValueRange{k, column}, mask, zeroVec);
        } else {
          x = vector::LoadOp::create(nb, loc, vec, rhs, ValueRange{k, column});
        }
        vector::StoreOp::create(nb, loc, x, out, ValueRange{p, k, index(v * lanes)});
      }
      scf::YieldOp::create(nb, loc);
    };
    scf::IfOp::create(
        b, loc, full,
        [&](OpBuilder& nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          copy(b, false);
        },
        [&](OpBuilder& nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          copy(b, true);
        });
    g.erase();
  }
}


class MicroKernelEmitter {
 public:
  MicroKernelEmitter(OpBuilder& b, Location loc, const MatmulTiles& tiles, Value packed)
      : b(b), loc(loc), t(tiles), packed(packed),
        vec(VectorType::get({tiles.lanes}, b.getF32Type())),
        maskType(VectorType::get({tiles.lanes}, b.getI1Type())) {}

  // B read in place from its prepacked panels (above): `emit` then packs nothing
  // and panel p of block nc is Bp[first + nc / NR + p].
  void readPrepacked(const PrepackedB& rhs) { prepacked = rhs; }
  // A and C through `callbacks` (GemmCallbacks) instead of the PackedGemm's memrefs.
  void reachThrough(const GemmCallbacks& c) { callbacks = &c; }

  // `packBlock(kc, kcSize, nc, panels)` fills the packed block with B's panels
  // [nc, nc + panels * NR) of rows [kc, kc + kcSize).
  void emit(const PackedGemm& g, llvm::function_ref<void(Value, Value, Value, Value)> packBlock) {
    Value zero = index(0);
    // Prepacked panels of a GEMM of one register tile of rows (known at compile time) are
    // each read once: streamed, so prefetched (prefetchPanelAhead). Panels that several
    // tiles share stay in L1/L2 after the first, and the prefetches only took issue slots
    // (DenseNet's 3x3 over 48 x 18 x 18 on a prepacked filter, 256 positions: 1.23x its
    // time; EfficientNet-B0's 1x1s over 4 x 4 planes, two tiles of 8: 1.05-1.27x).
    std::optional<int64_t> staticRows = getConstantIntValue(g.rows);
    streamsPanels = prepacked && staticRows && *staticRows <= t.rows && cpuPanelPrefetchBytes > 0;
    prefix = g.cPrefix;
    columns = g.columns;
    depth = g.depth;
    epilogue = g.epilogue;
    zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
    forLoop(zero, g.depth, index(t.depth), [&](Value kc) {
      Value kcEnd = arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, kc, index(t.depth)), g.depth);
      Value kcSize = arith::SubIOp::create(b, loc, kcEnd, kc);
      forLoop(zero, g.columns, index(t.blockColumns), [&](Value nc) {
        Value ncSize = arith::MinSIOp::create(
            b, loc, arith::SubIOp::create(b, loc, g.columns, nc), index(t.blockColumns));
        Value panels = arith::DivUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, ncSize, index(t.columns() - 1)), index(t.columns()));
        packBlock(kc, kcSize, nc, panels);
        forLoop(zero, g.rows, index(t.rowBlock), [&](Value mc) {
          Value mcEnd = arith::MinSIOp::create(
              b, loc, arith::AddIOp::create(b, loc, mc, index(t.rowBlock)), g.rows);
          forLoop(zero, panels, index(1), [&](Value p) {
            Panel panel = panelAt(nc, p);
            panel.a = g.a;
            panel.c = g.c;
            panel.kc = kc;
            panel.kcSize = kcSize;
            // Whole MR tiles, then the remainder as a sum of powers of two below MR.
            Value span = arith::SubIOp::create(b, loc, mcEnd, mc);
            Value whole = arith::MulIOp::create(
                b, loc, arith::DivUIOp::create(b, loc, span, index(t.rows)), index(t.rows));
            Value wholeEnd = arith::AddIOp::create(b, loc, mc, whole);
            forLoop(mc, wholeEnd, index(t.rows), [&](Value m) { registerTile(panel, m, t.rows); });
            Value rest = arith::SubIOp::create(b, loc, span, whole);
            Value at = wholeEnd;
            int64_t part = 1;
            while (part * 2 < t.rows) part *= 2;
            for (; part >= 1; part /= 2) {
              Value bit = arith::AndIOp::create(b, loc, rest, index(part));
              Value has = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bit, index(0));
              Value row = at;
              scf::IfOp::create(b, loc, has, [&](OpBuilder& nested, Location) {
                OpBuilder::InsertionGuard guard(b);
                b.setInsertionPoint(scf::YieldOp::create(nested, loc));
                registerTile(panel, row, part);
              });
              at = arith::AddIOp::create(b, loc, at, bit);
            }
          });
        });
      });
    });
  }

  // Each panel of the block through `packB`, which writes the panel's [KC][NR] view.
  void packPanels(PackBPanel packB, Value kc, Value kcSize, Value nc, Value panels) {
    forLoop(index(0), panels, index(1), [&](Value p) {
      Panel panel = panelAt(nc, p);
      OpFoldResult offsets[] = {panel.base, b.getIndexAttr(0)};
      OpFoldResult sizes[] = {b.getIndexAttr(t.depth), b.getIndexAttr(t.columns())};
      OpFoldResult strides[] = {b.getIndexAttr(1), b.getIndexAttr(1)};
      Value view = memref::SubViewOp::create(b, loc, packed, offsets, sizes, strides);
      packB(b, view, kc, kcSize, panel.n0, panel.full, panel.masks);
    });
  }

  // The block from a dense row-major B, row by row: each row's NC columns are one
  // contiguous run, which the hardware prefetches (a panel at a time would read one cache
  // line per row, a page apart when N is 1024).
  void packDenseBlock(Value bMat, Value kc, Value kcSize, Value nc, Value panels) {
    Value ncSize = arith::MinSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, columns, nc), index(t.blockColumns));
    Value fullPanels = arith::DivUIOp::create(b, loc, ncSize, index(t.columns()));
    forLoop(index(0), kcSize, index(1), [&](Value k) {
      Value row = arith::AddIOp::create(b, loc, kc, k);
      forLoop(index(0), fullPanels, index(1), [&](Value p) {
        Value n0 = arith::AddIOp::create(b, loc, nc, arith::MulIOp::create(b, loc, p, index(t.columns())));
        Value at = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, p, index(t.depth)), k);
        for (int64_t v = 0; v < t.vectors; ++v) {
          Value col = arith::AddIOp::create(b, loc, n0, index(v * t.lanes));
          Value x = vector::LoadOp::create(b, loc, vec, bMat, ValueRange{row, col});
          vector::StoreOp::create(b, loc, x, packed, ValueRange{at, index(v * t.lanes)});
        }
      });
      // The block's last panel when it reaches past N: masked, zero past N.
      Value partial = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, fullPanels, panels);
      scf::IfOp::create(b, loc, partial, [&](OpBuilder& nested, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(scf::YieldOp::create(nested, loc));
        Panel panel = panelAt(nc, fullPanels);
        Value at = arith::AddIOp::create(b, loc, panel.base, k);
        for (int64_t v = 0; v < t.vectors; ++v) {
          Value x = vector::MaskedLoadOp::create(b, loc, vec, bMat, ValueRange{row, column(panel, v)},
                                                 panel.masks[v], zeroVec);
          vector::StoreOp::create(b, loc, x, packed, ValueRange{at, index(v * t.lanes)});
        }
      });
    });
  }

 private:
  struct Panel {
    Value a, c, kc, kcSize, n0, full;
    Value base;                // the panel's first row in the packed block (p * KC)
    Value index;               // prepacked: the panel of Bp
    SmallVector<Value> masks;  // lanes of each vector inside N
  };

  // Panel p of the block at column nc: its columns, row in the block and masks at N.
  Panel panelAt(Value nc, Value p) {
    Panel panel;
    panel.n0 = arith::AddIOp::create(b, loc, nc, arith::MulIOp::create(b, loc, p, index(t.columns())));
    panel.base = arith::MulIOp::create(b, loc, p, index(t.depth));
    if (prepacked)
      panel.index = arith::AddIOp::create(
          b, loc, prepacked->firstPanel,
          arith::AddIOp::create(b, loc, arith::DivUIOp::create(b, loc, nc, index(t.columns())), p));
    Value left = arith::SubIOp::create(b, loc, columns, panel.n0);
    panel.full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, left, index(t.columns()));
    for (int64_t v = 0; v < t.vectors; ++v) {
      Value lanesLeft = arith::SubIOp::create(b, loc, left, index(v * t.lanes));
      panel.masks.push_back(vector::CreateMaskOp::create(b, loc, maskType, ValueRange{lanesLeft}));
    }
    return panel;
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  // scf.for lb..ub step with `body` emitted at the builder's insertion point inside.
  void forLoop(Value lb, Value ub, Value step, llvm::function_ref<void(Value)> body) {
    EmitForLoop(b, loc, lb, ub, step, body);
  }

  Value column(const Panel& p, int64_t v) {
    return arith::AddIOp::create(b, loc, p.n0, index(v * t.lanes));
  }

  SmallVector<Value> cIndex(Value row, Value col) {
    SmallVector<Value> at(prefix);
    at.push_back(row);
    at.push_back(col);
    return at;
  }

  // A prepacked panel of a GEMM of one register tile is read once straight from memory (a
  // constant filter or weight, often from L3 or DRAM: a small plane's 1x1 convolution
  // streams its whole filter per call for a few positions), so its row
  // --cpu-panel-prefetch-bytes (8 KiB) ahead is prefetched per k step: one prefetch per
  // cache line of the row. Past the panel's last row the address is the next panel's (the
  // panels are contiguous) or past the buffer, which a prefetch never faults on.
  void prefetchPanelAhead(Value panel, Value k) {
    constexpr int64_t kLineFloats = 16;
    const int64_t rowsAhead = std::max<int64_t>(1, cpuPanelPrefetchBytes / (t.columns() * 4));
    Value ahead = arith::AddIOp::create(b, loc, k, index(rowsAhead));
    for (int64_t j = 0; j < t.columns(); j += kLineFloats)
      memref::PrefetchOp::create(b, loc, prepacked->packed, ValueRange{panel, ahead, index(j)},
                                 /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
  }

  // C[m, m + rows) x [n0, n0 + NR) += A[.][kc, kc + kcSize) * Bp, in registers.
  void registerTile(const Panel& p, Value m, int64_t rows) {
    SmallVector<Value> rowIndex;
    SmallVector<SmallVector<Value>> rowValues;  // callbacks: each row's values
    for (int64_t i = 0; i < rows; ++i) {
      rowIndex.push_back(i == 0 ? m : arith::AddIOp::create(b, loc, m, index(i)).getResult());
      if (callbacks) rowValues.push_back(callbacks->row(b, rowIndex[i]));
    }
    auto loadC = [&](OpBuilder& nb, int64_t i, int64_t v, Value mask) -> Value {
      if (callbacks) return callbacks->loadC(nb, rowValues[i], column(p, v), mask);
      if (!mask) return vector::LoadOp::create(nb, loc, vec, p.c, cIndex(rowIndex[i], column(p, v)));
      return vector::MaskedLoadOp::create(nb, loc, vec, p.c, cIndex(rowIndex[i], column(p, v)), mask,
                                          zeroVec);
    };
    auto storeC = [&](OpBuilder& nb, int64_t i, int64_t v, Value mask, Value value) {
      if (callbacks) return callbacks->storeC(nb, rowValues[i], column(p, v), mask, value);
      if (!mask)
        vector::StoreOp::create(nb, loc, value, p.c, cIndex(rowIndex[i], column(p, v)));
      else
        vector::MaskedStoreOp::create(nb, loc, p.c, cIndex(rowIndex[i], column(p, v)), mask, value);
    };
    const bool addTile = callbacks && callbacks->addTile;
    // An epilogue's start values: init(row, columns) for each vector, masked in a partial panel.
    auto initial = [&](OpBuilder& nb, bool masked) {
      SmallVector<Value> values;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < t.vectors; ++v)
          values.push_back(epilogue.init(nb, rowIndex[i], column(p, v), masked ? p.masks[v] : Value()));
      return values;
    };
    SmallVector<Value> zeros(addTile && !epilogue.init ? rows * t.vectors : 0, zeroVec);
    if (addTile && epilogue.init) {
      // K is one block: the accumulators start at the epilogue's values.
      auto start = scf::IfOp::create(
          b, loc, p.full,
          [&](OpBuilder& nested, Location) { scf::YieldOp::create(nested, loc, initial(nested, false)); },
          [&](OpBuilder& nested, Location) { scf::YieldOp::create(nested, loc, initial(nested, true)); });
      zeros.assign(start.getResults().begin(), start.getResults().end());
    }
    // Full panels use plain loads and stores; the last one is masked at N.
    auto loadTile = [&](OpBuilder& b) { return scf::IfOp::create(
        b, loc, p.full,
        [&](OpBuilder& nested, Location) {
          SmallVector<Value> values;
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t v = 0; v < t.vectors; ++v) values.push_back(loadC(nested, i, v, Value()));
          scf::YieldOp::create(nested, loc, values);
        },
        [&](OpBuilder& nested, Location) {
          SmallVector<Value> values;
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t v = 0; v < t.vectors; ++v) values.push_back(loadC(nested, i, v, p.masks[v]));
          scf::YieldOp::create(nested, loc, values);
        }); };
    // With an epilogue's init, the first K block starts at it (C is not read), later ones at C.
    SmallVector<Value> start;
    if (!addTile && epilogue.init) {
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, p.kc, index(0));
      auto choice = scf::IfOp::create(
          b, loc, first,
          [&](OpBuilder& nested, Location) {
            auto fresh = scf::IfOp::create(
                nested, loc, p.full,
                [&](OpBuilder& inner, Location) { scf::YieldOp::create(inner, loc, initial(inner, false)); },
                [&](OpBuilder& inner, Location) { scf::YieldOp::create(inner, loc, initial(inner, true)); });
            scf::YieldOp::create(nested, loc, fresh.getResults());
          },
          [&](OpBuilder& nested, Location) { scf::YieldOp::create(nested, loc, loadTile(nested).getResults()); });
      start.assign(choice.getResults().begin(), choice.getResults().end());
    } else if (!addTile) {
      auto load = loadTile(b);
      start.assign(load.getResults().begin(), load.getResults().end());
    }
    auto loop = scf::ForOp::create(
        b, loc, index(0), p.kcSize, index(1), addTile ? ValueRange(zeros) : ValueRange(start),
        [&](OpBuilder& nested, Location, Value k, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          SmallVector<Value> bv;
          Value ak = arith::AddIOp::create(b, loc, p.kc, k);
          if (prepacked) {
            for (int64_t v = 0; v < t.vectors; ++v)
              bv.push_back(vector::LoadOp::create(b, loc, vec, prepacked->packed,
                                                  ValueRange{p.index, ak, index(v * t.lanes)}));
            if (streamsPanels) prefetchPanelAhead(p.index, ak);
          } else {
            Value bk = arith::AddIOp::create(b, loc, p.base, k);
            for (int64_t v = 0; v < t.vectors; ++v)
              bv.push_back(vector::LoadOp::create(b, loc, vec, packed, ValueRange{bk, index(v * t.lanes)}));
          }
          SmallVector<Value> next;
          for (int64_t i = 0; i < rows; ++i) {
            Value scalar = callbacks ? callbacks->loadA(b, rowValues[i], ak)
                                     : Value(memref::LoadOp::create(b, loc, p.a, ValueRange{rowIndex[i], ak}));
            Value splat = vector::BroadcastOp::create(b, loc, vec, scalar);
            for (int64_t v = 0; v < t.vectors; ++v)
              next.push_back(vector::FMAOp::create(b, loc, splat, bv[v], acc[i * t.vectors + v]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    SmallVector<Value> results(loop.getResults());
    if (epilogue.relu) {
      // max(acc, 0) where this is the last K block (a select on a scalar: folds when K is one).
      Value last = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         arith::AddIOp::create(b, loc, p.kc, p.kcSize), depth);
      for (Value& v : results)
        v = arith::SelectOp::create(b, loc, last, arith::MaximumFOp::create(b, loc, v, zeroVec), v);
    }
    ValueRange acc = results;
    const bool store = static_cast<bool>(epilogue.init);
    if (addTile) {
      scf::IfOp::create(
          b, loc, p.full,
          [&](OpBuilder& nested, Location) {
            callbacks->addTile(nested, rowValues, p.n0, {}, acc, store);
            scf::YieldOp::create(nested, loc);
          },
          [&](OpBuilder& nested, Location) {
            callbacks->addTile(nested, rowValues, p.n0, p.masks, acc, store);
            scf::YieldOp::create(nested, loc);
          });
      return;
    }
    scf::IfOp::create(
        b, loc, p.full,
        [&](OpBuilder& nested, Location) {
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t v = 0; v < t.vectors; ++v) storeC(nested, i, v, Value(), acc[i * t.vectors + v]);
          scf::YieldOp::create(nested, loc);
        },
        [&](OpBuilder& nested, Location) {
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t v = 0; v < t.vectors; ++v) storeC(nested, i, v, p.masks[v], acc[i * t.vectors + v]);
          scf::YieldOp::create(nested, loc);
        });
  }

  OpBuilder& b;
  Location loc;
  const MatmulTiles& t;
  Value packed;
  std::optional<PrepackedB> prepacked;
  const GemmCallbacks* callbacks = nullptr;
  bool streamsPanels = false;
  VectorType vec, maskType;
  Value zeroVec;
  SmallVector<Value> prefix;  // C's leading indices
  Value columns;              // N
  Value depth;                // K
  GemmEpilogue epilogue;
};

}  // namespace

Value AllocatePackedBlock(func::FuncOp kernel, const MatmulTiles& tiles) {
  // At entry: an alloca inside a loop would grow the stack.
  OpBuilder b(kernel.getContext());
  b.setInsertionPointToStart(&kernel.getBody().front());
  int64_t panels = tiles.blockColumns / tiles.columns();
  auto packedType = MemRefType::get({panels * tiles.depth, tiles.columns()}, b.getF32Type());
  return memref::AllocaOp::create(b, kernel.getLoc(), packedType, b.getI64IntegerAttr(64));
}

void EmitPackedGemm(OpBuilder& b, Location loc, const MatmulTiles& tiles, Value packed,
                    const PackedGemm& gemm, PackBPanel packB) {
  MicroKernelEmitter emitter(b, loc, tiles, packed);
  emitter.emit(gemm, [&](Value kc, Value kcSize, Value nc, Value panels) {
    emitter.packPanels(packB, kc, kcSize, nc, panels);
  });
}

void EmitPrepackedGemm(OpBuilder& b, Location loc, const MatmulTiles& tiles, const PrepackedB& rhs,
                       Value rows, Value columns, Value depth, const GemmCallbacks& callbacks,
                       const GemmEpilogue& epilogue) {
  MicroKernelEmitter emitter(b, loc, tiles, Value());
  emitter.readPrepacked(rhs);
  emitter.reachThrough(callbacks);
  emitter.emit(PackedGemm{Value(), Value(), {}, rows, columns, depth, epilogue},
               [](Value, Value, Value, Value) {});
}

void LowerMatmulsToMicroKernels(func::FuncOp kernel, const MatmulTiles& tiles) {
  SmallVector<linalg::LinalgOp> matmuls;
  kernel.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && TakesMatmulMicroKernel(op)) matmuls.push_back(op);
  });
  if (matmuls.empty()) return LowerPackRhsKernels(kernel, tiles.lanes);
  Value packed;  // the stack block, allocated when some B is not prepacked
  OpBuilder b(kernel.getContext());
  for (linalg::LinalgOp op : matmuls) {
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], bMat = op.getDpsInputs()[1], c = op.getDpsInits()[0];
    PackedGemm gemm{a, c, {}, memref::DimOp::create(b, loc, c, 0),
                    memref::DimOp::create(b, loc, c, 1), memref::DimOp::create(b, loc, a, 1)};
    std::optional<PrepackedB> rhs = FindPrepackedOperand(b, bMat, 1);
    if (rhs && rhs->nr == tiles.columns()) {
      MicroKernelEmitter emitter(b, loc, tiles, Value());
      emitter.readPrepacked(*rhs);
      emitter.emit(gemm, [](Value, Value, Value, Value) {});
    } else {
      if (!packed) {
        OpBuilder::InsertionGuard guard(b);
        packed = AllocatePackedBlock(kernel, tiles);
      }
      MicroKernelEmitter emitter(b, loc, tiles, packed);
      emitter.emit(gemm, [&](Value kc, Value kcSize, Value nc, Value panels) {
        emitter.packDenseBlock(bMat, kc, kcSize, nc, panels);
      });
    }
    op->erase();
  }
  ErasePrepackedOperands(kernel);
  LowerPackRhsKernels(kernel, tiles.lanes);
}

}  // namespace hexir::codegen
