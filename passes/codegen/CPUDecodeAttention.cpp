#include "passes/codegen/CPUDecodeAttention.h"

#include <cmath>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/codegen/WorkgroupCount.h"

namespace hexir::codegen {
using namespace mlir;

namespace {
constexpr int64_t kMaxGroup = 16;
constexpr int64_t kMaxScoreBytes = 256 * 1024;
constexpr double kNegInf = -3.0e38;  // the importer's softmax identity

// The kernel argument a generic's body loads from, or -1.
int64_t LoadedArgument(linalg::GenericOp g) {
  int64_t found = -1;
  g.getBody()->walk([&](memref::LoadOp load) {
    if (auto arg = dyn_cast<BlockArgument>(load.getMemRef()); arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      found = arg.getArgNumber();
  });
  return found;
}

bool IsIdentityMemRef(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.hasStaticShape() && m.getLayout().isIdentity();
}

struct Roles {
  int64_t kvHeads = 0, group = 0, headDim = 0, cacheLen = 0;
  Value q, k, v, out, n;
  Value workgroup;  // the unused trailing workgroup id hexir-cpu-distribute-workgroups added, or null
  double scale = 1.0;
  linalg::GenericOp prologue;
};

std::optional<Roles> Match(func::FuncOp kernel) {
  auto exe = kernel->getParentOfType<ExecutableOp>();
  auto kind = exe ? exe->getAttrOfType<StringAttr>(kDispatchGroupAttr) : StringAttr();
  if (!kind || kind.getValue() != kDecodeAttentionGroup || !kernel.getBody().hasOneBlock()) return std::nullopt;
  Block& entry = kernel.getBody().front();
  // The whole group in one workgroup: every generic at the top level, no loops around them.
  SmallVector<linalg::GenericOp> generics;
  bool nested = false;
  kernel.walk([&](Operation* op) {
    if (isa<scf::ForOp, scf::ForallOp, scf::ParallelOp>(op)) nested = true;
    if (auto g = dyn_cast<linalg::GenericOp>(op)) {
      if (g->getBlock() != &entry) nested = true;
      generics.push_back(g);
    }
  });
  if (nested || generics.size() < 3) return std::nullopt;
  Roles r;
  if (generics.front().getNumReductionLoops() == 0) {
    r.prologue = generics.front();
    generics.erase(generics.begin());
  }
  linalg::GenericOp scores = generics.front(), values = generics.back();
  int64_t k = LoadedArgument(scores), v = LoadedArgument(values);
  if (k < 0 || v < 0 || k == v || scores.getNumDpsInputs() != 1 || values.getNumDpsInits() != 1) return std::nullopt;
  r.k = entry.getArgument(k), r.v = entry.getArgument(v);
  auto cache = dyn_cast<MemRefType>(r.k.getType());
  if (!IsIdentityMemRef(cache) || cache != r.v.getType() || cache.getRank() != 2 ||
      !(cache.getElementType().isF32() || cache.getElementType().isF16()))
    return std::nullopt;
  r.out = values.getDpsInits()[0];
  auto out = dyn_cast<MemRefType>(r.out.getType());
  auto outArg = dyn_cast<BlockArgument>(r.out);
  if (!outArg || outArg.getOwner() != &entry || !IsIdentityMemRef(out) || out.getRank() != 3 ||
      !out.getElementType().isF32())
    return std::nullopt;
  r.kvHeads = out.getDimSize(0), r.group = out.getDimSize(1), r.headDim = out.getDimSize(2);
  r.cacheLen = cache.getDimSize(0);
  if (cache.getDimSize(1) != r.kvHeads * r.headDim || r.group > kMaxGroup ||
      r.group * r.cacheLen * 4 > kMaxScoreBytes)
    return std::nullopt;
  // q: the scores' input, an argument or the prologue's output (its input an argument).
  r.q = scores.getDpsInputs()[0];
  Value qArg = r.q;
  if (r.prologue) {
    if (r.prologue.getNumDpsInputs() != 1 || r.prologue.getNumDpsInits() != 1 ||
        r.prologue.getDpsInits()[0] != r.q || r.prologue.getNumResults() != 0)
      return std::nullopt;
    qArg = r.prologue.getDpsInputs()[0];
  }
  auto qArgument = dyn_cast<BlockArgument>(qArg);
  if (!qArgument || qArgument.getOwner() != &entry || qArg.getType() != out || r.q.getType() != out) return std::nullopt;
  // The length: the one scalar (or 1-D i64 position buffer) not read only by the prologue.
  for (BlockArgument arg : entry.getArguments()) {
    if (arg == r.k || arg == r.v || arg == r.out || arg == qArg || arg.use_empty()) continue;
    if (r.prologue && llvm::all_of(arg.getUsers(), [&](Operation* u) { return r.prologue->isAncestor(u); }))
      continue;
    auto position = dyn_cast<MemRefType>(arg.getType());
    bool length = arg.getType().isIndex() || arg.getType().isInteger(64) ||
                  (position && position.getRank() == 1 && position.hasStaticShape() &&
                   position.getElementType().isInteger(64));
    if (!length || r.n) return std::nullopt;
    r.n = arg;
  }
  if (!r.n) return std::nullopt;
  BlockArgument last = entry.getArguments().back();
  if (last.getType().isIndex() && last.use_empty()) r.workgroup = last;
  // The importer's scale: the constant the scores are divided by after the dot.
  r.scale = std::sqrt(double(r.headDim));
  for (linalg::GenericOp g : generics)
    if (g != scores && g != values) {
      g.getBody()->walk([&](arith::DivFOp div) {
        if (auto c = div.getRhs().getDefiningOp<arith::ConstantOp>())
          if (auto f = dyn_cast<FloatAttr>(c.getValue())) r.scale = f.getValueAsDouble();
      });
      break;
    }
  return r;
}

// Restricts the prologue (an elementwise generic over q [kvHeads][G][HD], identity maps) to
// the KV heads [first, first + count): its operands become their [count][G][HD] views and
// its body's index 0 is offset by `first`. False (unchanged) when its maps are not the
// identity.
bool RestrictPrologueToHeads(linalg::GenericOp prologue, Value first, int64_t count) {
  if (!llvm::all_of(prologue.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); })) return false;
  OpBuilder b(prologue);
  Location loc = prologue.getLoc();
  for (OpOperand& operand : prologue->getOpOperands()) {
    auto type = cast<MemRefType>(operand.get().getType());
    SmallVector<OpFoldResult> offsets{first, b.getIndexAttr(0), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(count), b.getIndexAttr(type.getDimSize(1)),
                                    b.getIndexAttr(type.getDimSize(2))};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    operand.set(memref::SubViewOp::create(b, loc, operand.get(), offsets, sizes, strides));
  }
  prologue.getBody()->walk([&](linalg::IndexOp index) {
    if (index.getDim() != 0) return;
    OpBuilder after(index);
    after.setInsertionPointAfter(index);
    auto head = arith::AddIOp::create(after, index.getLoc(), index, first);
    index.getResult().replaceAllUsesExcept(head, head);
  });
  return true;
}

// The most workgroups for `kvHeads` heads within `limit`: the largest divisor (each
// workgroup takes as many heads).
int64_t HeadWorkgroups(int64_t kvHeads, int64_t limit) {
  for (int64_t count = std::min(kvHeads, limit); count > 1; --count)
    if (kvHeads % count == 0) return count;
  return 1;
}

// The ops of `entry` the prologue needs (its operands and captures, transitively).
llvm::SmallPtrSet<Operation*, 16> PrologueSlice(Block& entry, linalg::GenericOp prologue) {
  llvm::SmallPtrSet<Operation*, 16> keep;
  SmallVector<Operation*> work{prologue};
  while (!work.empty()) {
    Operation* op = work.pop_back_val();
    if (!keep.insert(op).second) continue;
    llvm::SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    for (Region& region : op->getRegions()) getUsedValuesDefinedAbove(region, used);
    for (Value value : used)
      if (Operation* def = value.getDefiningOp(); def && def->getBlock() == &entry) work.push_back(def);
  }
  return keep;
}

class Builder {
 public:
  Builder(OpBuilder& b, Location loc) : b(b), loc(loc) {}
  OpBuilder& b;
  Location loc;
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value muli(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  // for (i = lo; i < hi; ++i) body(i, iter) -> iter results.
  SmallVector<Value> loop(Value lo, Value hi, ValueRange init,
                          llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto f = scf::ForOp::create(b, loc, lo, hi, idx(1), init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    SmallVector<Value> next = body(f.getInductionVar(), f.getRegionIterArgs());
    if (f.getBody()->mightHaveTerminator()) f.getBody()->getTerminator()->erase();
    b.setInsertionPointToEnd(f.getBody());
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(f.getResults());
  }
};
}  // namespace

bool LowerDecodeAttentionToVectorLoops(func::FuncOp kernel, int64_t vectorBits) {
  auto limits = kernel->getAttrOfType<DenseI64ArrayAttr>(kWorkgroupLimitsAttr);
  kernel->removeAttr(kWorkgroupLimitsAttr);
  std::optional<Roles> r = Match(kernel);
  if (!r) return false;
  // The KV heads split evenly over workgroups within kWorkgroupLimitsAttr where
  // hexir-cpu-distribute-workgroups left the kernel whole with a workgroup id (q's rotary
  // prologue then computes the workgroup's heads only); else every head in one.
  int64_t workgroups = 1;
  if (limits && limits.size() == 2 && r->workgroup) {
    const int64_t work = 2 * r->kvHeads * r->group * r->headDim * r->cacheLen;
    workgroups = HeadWorkgroups(r->kvHeads, std::min(limits[0], work / std::max<int64_t>(1, limits[1])));
  }
  Block& entry = kernel.getBody().front();
  int64_t heads = r->kvHeads / workgroups;
  // The workgroup's first head (id * heads) at the entry, kept with the prologue's slice.
  Value firstHead;
  SmallVector<Operation*> headOps;
  if (workgroups > 1) {
    OpBuilder front = OpBuilder::atBlockBegin(&entry);
    auto perWorkgroup = arith::ConstantIndexOp::create(front, kernel.getLoc(), heads);
    auto first = arith::MulIOp::create(front, kernel.getLoc(), r->workgroup, perWorkgroup);
    headOps = {perWorkgroup, first};
    firstHead = first;
    if (r->prologue && !RestrictPrologueToHeads(r->prologue, firstHead, heads)) {
      first->erase(), perWorkgroup->erase();
      headOps.clear(), firstHead = nullptr, workgroups = 1, heads = r->kvHeads;
    }
  }
  llvm::SmallPtrSet<Operation*, 16> keep;
  if (r->prologue) keep = PrologueSlice(entry, r->prologue);
  keep.insert(headOps.begin(), headOps.end());
  SmallVector<Operation*> oldBody;
  for (Operation& op : entry.without_terminator())
    if (!keep.contains(&op)) oldBody.push_back(&op);

  OpBuilder ob(entry.getTerminator());
  Location loc = kernel.getLoc();
  Builder k(ob, loc);
  OpBuilder& b = ob;
  const int64_t G = r->group, HD = r->headDim, S = r->cacheLen;
  int64_t lanes = 1;
  for (int64_t w : {16, 8, 4, 2})
    if (w <= std::max<int64_t>(1, vectorBits / 32) && HD % w == 0) {
      lanes = w;
      break;
    }
  const int64_t chunks = HD / lanes;
  Type f32 = b.getF32Type();
  Type cacheElement = cast<MemRefType>(r->k.getType()).getElementType();
  auto vf = VectorType::get({lanes}, f32), vc = VectorType::get({lanes}, cacheElement);
  auto fma = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  Value scores = memref::AllocaOp::create(b, loc, MemRefType::get({G, S}, f32), b.getI64IntegerAttr(64));
  Value sums = memref::AllocaOp::create(b, loc, MemRefType::get({G}, f32));
  Value n = r->n;
  if (isa<MemRefType>(n.getType())) {  // a position buffer: n = position + 1
    Value pos = memref::LoadOp::create(b, loc, n, ValueRange{k.idx(0)});
    n = k.addi(arith::IndexCastOp::create(b, loc, b.getIndexType(), pos), k.idx(1));
  } else if (!n.getType().isIndex()) {
    n = arith::IndexCastOp::create(b, loc, b.getIndexType(), n);
  }
  n = arith::MinUIOp::create(b, loc, n, k.idx(S));  // never past the cache
  Value zero = k.idx(0), zeroVector = arith::ConstantOp::create(b, loc, vf, DenseElementsAttr::get(vf, 0.0f));
  Value scale = k.f32(r->scale);
  auto loadRow = [&](Value cache, Value row, Value col) -> Value {
    Value x = vector::LoadOp::create(b, loc, vc, cache, ValueRange{row, col});
    return cacheElement.isF32() ? x : (Value)arith::ExtFOp::create(b, loc, vf, x);
  };
  Value headsFrom = firstHead ? firstHead : zero;
  k.loop(headsFrom, k.addi(headsFrom, k.idx(heads)), {}, [&](Value a, ValueRange) {
    Value col0 = k.muli(a, k.idx(HD));
    // Scores: each K chunk loaded once for the group's G query heads.
    k.loop(zero, n, {}, [&](Value s, ValueRange) {
      SmallVector<Value> init(G, zeroVector);
      SmallVector<Value> acc = k.loop(zero, k.idx(chunks), init, [&](Value c, ValueRange accs) {
        Value d = k.muli(c, k.idx(lanes));
        Value kv = loadRow(r->k, s, k.addi(col0, d));
        SmallVector<Value> next;
        for (int64_t g = 0; g < G; ++g) {
          Value qv = vector::LoadOp::create(b, loc, vf, r->q, ValueRange{a, k.idx(g), d});
          next.push_back(vector::FMAOp::create(b, loc, qv, kv, accs[g]));
        }
        return next;
      });
      for (int64_t g = 0; g < G; ++g) {
        Value dot = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc[g], fma);
        memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, dot, scale), scores, ValueRange{k.idx(g), s});
      }
      return SmallVector<Value>{};
    });
    // Softmax per query head (unnormalized; the sum kept for the values).
    k.loop(zero, k.idx(G), {}, [&](Value g, ValueRange) {
      Value m = k.loop(zero, n, {k.f32(kNegInf)}, [&](Value s, ValueRange acc) {
        Value x = memref::LoadOp::create(b, loc, scores, ValueRange{g, s});
        return SmallVector<Value>{arith::MaximumFOp::create(b, loc, acc[0], x)};
      })[0];
      Value l = k.loop(zero, n, {k.f32(0.0)}, [&](Value s, ValueRange acc) {
        Value x = memref::LoadOp::create(b, loc, scores, ValueRange{g, s});
        Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, m));
        memref::StoreOp::create(b, loc, p, scores, ValueRange{g, s});
        return SmallVector<Value>{arith::AddFOp::create(b, loc, acc[0], p)};
      })[0];
      Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l, k.f32(0.0));
      memref::StoreOp::create(b, loc, arith::SelectOp::create(b, loc, positive, l, k.f32(1.0)), sums, ValueRange{g});
      return SmallVector<Value>{};
    });
    // Values: each V chunk loaded once for the G heads.
    k.loop(zero, k.idx(chunks), {}, [&](Value c, ValueRange) {
      Value d = k.muli(c, k.idx(lanes));
      Value col = k.addi(col0, d);
      SmallVector<Value> init(G, zeroVector);
      SmallVector<Value> acc = k.loop(zero, n, init, [&](Value s, ValueRange accs) {
        Value vv = loadRow(r->v, s, col);
        SmallVector<Value> next;
        for (int64_t g = 0; g < G; ++g) {
          Value p = memref::LoadOp::create(b, loc, scores, ValueRange{k.idx(g), s});
          Value pv = vector::BroadcastOp::create(b, loc, vf, p);
          next.push_back(vector::FMAOp::create(b, loc, pv, vv, accs[g]));
        }
        return next;
      });
      for (int64_t g = 0; g < G; ++g) {
        Value l = memref::LoadOp::create(b, loc, sums, ValueRange{k.idx(g)});
        Value o = arith::DivFOp::create(b, loc, acc[g], vector::BroadcastOp::create(b, loc, vf, l));
        vector::StoreOp::create(b, loc, o, r->out, ValueRange{a, k.idx(g), d});
      }
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
  for (Operation* op : llvm::reverse(oldBody)) op->erase();
  if (workgroups > 1)
    kernel->getParentOfType<ExecutableOp>()->setAttr(
        kWorkgroupCountAttr, DenseI64ArrayAttr::get(kernel.getContext(), {workgroups, 1, 1}));
  return true;
}

}  // namespace hexir::codegen
