// The quantized GEMV kernel (CUDAQuantizedGemv.h says what it computes and how). The same
// role finder runs on the tensor form (matching) and on the bufferized form (lowering), so
// the two agree on what the kernel holds.
#include "passes/codegen/CUDAQuantizedGemv.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/CommandLine.h"
#include "passes/codegen/CUDABlockMatvec.h"
#include "passes/codegen/CUDABlockSum.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/CUDAGemvDecode.h"
#include "passes/codegen/CUDAPasses.h"
#include "passes/codegen/CUDAQuantizedGemvInt8.h"
#include "passes/codegen/KernelLoweringUtils.h"
#include "passes/codegen/WorkgroupCount.h"

namespace hexir::cuda {
using namespace mlir;

std::vector<int64_t> QuantizedGemv::encode() const {
  return {rows, blocks, blockValues, blockBytes, groupBlocks, align, lanes, warps, passes, int8X};
}

std::optional<QuantizedGemv> QuantizedGemv::decode(llvm::ArrayRef<int64_t> w) {
  if (w.size() != 10) return std::nullopt;
  QuantizedGemv s;
  s.rows = w[0], s.blocks = w[1], s.blockValues = w[2], s.blockBytes = w[3];
  s.groupBlocks = w[4], s.align = w[5], s.lanes = w[6], s.warps = w[7], s.passes = w[8], s.int8X = w[9] != 0;
  if (s.lanes < 1 || s.lanes > 32 || (s.lanes & (s.lanes - 1)) || s.warps < 1 || s.warps > 32 || s.passes < 1)
    return std::nullopt;
  return s;
}

namespace {
// The decode step's block matvec, loops (n, b, j); a prompt's M-row form (m, n, b, j), marked
// too (for the CPU kernel), keeps the generic kernel without a remark.
bool IsOneRowBlockMatvec(linalg::GenericOp g) { return g->hasAttr(kBlockMatvecAttr) && g.getNumLoops() == 3; }

constexpr int64_t kSMs = 132;  // the H200's: fewer blocks than this leave SMs idle

// One block matvec of the kernel.
struct Matvec {
  linalg::GenericOp gemv;
  arith::AddFOp sum;                // acc + term in gemv's body
  BlockArgument weight;             // W, a kernel argument
  SmallVector<Operation*> reads;    // W's reads in gemv's body (tensor.extract / memref.load)
  linalg::FillOp fill;              // of its accumulator
  Value init;                       // the scalar gemv's accumulator is filled with
  Value acc() { return gemv.getDpsInitOperand(0)->get(); }
};

// A whole sum over [K] that the prologue reads (a norm's sum of squares, recomputed here:
// hexir-fuse-small-reductions): init + sum_k term(inputs[k]), its inputs [K] kernel arguments.
struct WholeSum {
  linalg::GenericOp sum;
  arith::AddFOp combine;  // acc + term in its body
  Value init;             // the scalar its accumulator is filled with
  Value result;           // what the prologue reads: the rank-0 result (tensor form) or buffer
};

// What the kernel holds, in tensor or buffer form.
struct Roles : Matvec {
  Value x;                          // gemv's input [blocks][B]
  SmallVector<linalg::GenericOp> prologue;  // elementwise producers of x over [K], in order
  SmallVector<WholeSum> wholeSums;  // read by the prologue, computed first (EmitBlockSum)
  // The sibling (hexir-form-dispatch-regions' fuse-sibling-reductions: w1 beside w3): a
  // second block matvec of x, its W of the same shape, read only by the first consumer.
  std::optional<Matvec> sibling;
  SmallVector<linalg::GenericOp> epilogue;  // elementwise consumers, in order
  Value result;                     // where the last value goes (buffer form: a kernel argument)
};

bool IsRead(Operation* op) { return isa<tensor::ExtractOp, memref::LoadOp>(op); }
Value ReadSource(Operation* op) {
  if (auto e = dyn_cast<tensor::ExtractOp>(op)) return e.getTensor();
  return cast<memref::LoadOp>(op).getMemref();
}
ValueRange ReadIndices(Operation* op) {
  if (auto e = dyn_cast<tensor::ExtractOp>(op)) return e.getIndices();
  return cast<memref::LoadOp>(op).getIndices();
}

// The constant `v` takes when the linalg.index values are `env` (dim -> value; nullopt:
// unknown), folding the index arithmetic of a body; null when it depends on anything else.
Attribute Evaluate(Value v, ArrayRef<std::optional<int64_t>> env, DenseMap<Value, Attribute>& memo) {
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  Attribute result;
  if (Operation* op = v.getDefiningOp()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      if (index.getDim() < env.size() && env[index.getDim()])
        result = IntegerAttr::get(IndexType::get(op->getContext()), *env[index.getDim()]);
    } else if (matchPattern(v, m_Constant(&result))) {
    } else if (op->getNumRegions() == 0 && !IsRead(op) && isPure(op)) {
      SmallVector<Attribute> operands;
      bool known = true;
      for (Value o : op->getOperands()) {
        operands.push_back(Evaluate(o, env, memo));
        known &= operands.back() != nullptr;
      }
      SmallVector<OpFoldResult> folded;
      if (known && succeeded(op->fold(operands, folded)) && folded.size() == op->getNumResults()) {
        OpFoldResult f = folded[cast<OpResult>(v).getResultNumber()];
        result = dyn_cast<Attribute>(f);
        // x + 0 folds to x: the operand's value.
        if (auto same = dyn_cast<Value>(f); same && same != v) result = Evaluate(same, env, memo);
      }
    }
  }
  memo[v] = result;
  return result;
}

// Values a body uses from outside it: constants or kernel arguments only.
bool OnlyConstantsAndArguments(Region& body, Block& entry) {
  bool ok = true;
  body.walk([&](Operation* op) {
    for (Value operand : op->getOperands()) {
      if (body.isAncestor(operand.getParentRegion())) continue;
      auto arg = dyn_cast<BlockArgument>(operand);
      ok &= (arg && arg.getOwner() == &entry) || matchPattern(operand, m_Constant());
    }
    ok &= op->getNumRegions() == 0 || op == body.getParentOp();
  });
  return ok;
}

// An elementwise generic over [N] with identity maps, one output it does not read, and no
// reads in its body.
bool IsEpilogue(linalg::GenericOp g, int64_t rows, Block& entry) {
  if (g.getNumDpsInits() != 1 || g.getNumLoops() != 1 || g.getNumParallelLoops() != 1) return false;
  for (AffineMap map : g.getIndexingMapsArray())
    if (!map.isIdentity()) return false;
  for (Value v : g->getOperands()) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (!t || t.getRank() != 1 || t.getDimSize(0) != rows) return false;
  }
  Block* body = g.getBlock();
  if (!body->getArguments().back().use_empty()) return false;
  bool reads = false;
  body->walk([&](Operation* op) { reads |= IsRead(op); });
  return !reads && OnlyConstantsAndArguments(g.getRegion(), entry);
}

// An elementwise generic computing [K] (the final RMSNorm's scaling of the classifier's x):
// inputs [K] with identity maps or rank 0 (a norm's sum), one output it does not read, no
// reads in its body.
bool IsPrologue(linalg::GenericOp g, int64_t k, Block& entry) {
  if (g.getNumDpsInits() != 1 || g.getNumLoops() != 1 || g.getNumParallelLoops() != 1) return false;
  for (OpOperand& operand : g->getOpOperands()) {
    auto t = dyn_cast<ShapedType>(operand.get().getType());
    AffineMap map = g.getMatchingIndexingMap(&operand);
    bool whole = t && t.getRank() == 1 && t.getDimSize(0) == k && map.isIdentity();
    bool scalar = t && t.getRank() == 0 && map.getNumResults() == 0 && g.isDpsInput(&operand);
    if (!whole && !scalar) return false;
  }
  Block* body = g.getBlock();
  if (!body->getArguments().back().use_empty()) return false;
  bool reads = false;
  body->walk([&](Operation* op) { reads |= IsRead(op); });
  return !reads && OnlyConstantsAndArguments(g.getRegion(), entry);
}

// A pure arith op on scalars (a row offset's index_cast).
bool IsScalarArith(Operation* op) {
  return isa<arith::ArithDialect>(op->getDialect()) && op->getNumRegions() == 0 && isPure(op) &&
         llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIntOrIndex(); });
}

// A write of `value` ([N]) as one row of a 2-D kernel argument at a row offset given by
// kernel arguments or constants (the decode step's V projection into its KV cache row):
// tensor.insert_slice value into arg[p, 0] [1, N] [1, 1] (tensor form) or memref.copy of
// `value` into such a subview of arg (buffer form). The written value (the insert's result,
// the subview) or null.
Value IsRowWrite(Operation* op, Value value, int64_t rows, Block& entry) {
  std::function<bool(Value)> fromEntry = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    if ((arg && arg.getOwner() == &entry) || matchPattern(v, m_Constant())) return true;
    Operation* def = v.getDefiningOp();
    return def && IsScalarArith(def) && llvm::all_of(def->getOperands(), fromEntry);
  };
  auto isRow = [&](OffsetSizeAndStrideOpInterface slice, Value whole) {
    auto type = dyn_cast<ShapedType>(whole.getType());
    auto arg = dyn_cast<BlockArgument>(whole);
    if (!arg || arg.getOwner() != &entry || !type || type.getRank() != 2 || type.getDimSize(1) != rows) return false;
    ArrayRef<int64_t> sizes = slice.getStaticSizes(), strides = slice.getStaticStrides();
    if (sizes.size() != 2 || sizes[0] != 1 || sizes[1] != rows || strides[0] != 1 || strides[1] != 1) return false;
    if (slice.getStaticOffsets().back() != 0) return false;
    return llvm::all_of(slice.getOffsets(), fromEntry);
  };
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return insert.getSource() == value && isRow(insert, insert.getDest()) ? insert.getResult() : Value();
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto view = copy.getTarget().getDefiningOp<memref::SubViewOp>();
    return copy.getSource() == value && view && isRow(view, view.getSource()) ? view.getResult() : Value();
  }
  return Value();
}

// The whole sum computing `value` (rank 0) ahead of `reader` (buffer form: the last generic
// before it writing that buffer): one reduction loop over [k], inputs [k] kernel arguments
// read through identity maps, a body acc + term (term not reading acc, no reads, no index),
// its accumulator filled with a kernel argument or a constant. Null `sum` otherwise.
WholeSum MatchWholeSum(Value value, Operation* reader, int64_t k, Block& entry, bool buffers) {
  WholeSum w;
  linalg::GenericOp g;
  if (!buffers) {
    g = value.getDefiningOp<linalg::GenericOp>();
  } else {
    for (Operation* op = reader->getPrevNode(); op && !g; op = op->getPrevNode())
      if (auto candidate = dyn_cast<linalg::GenericOp>(op);
          candidate && candidate.getNumDpsInits() == 1 && candidate.getDpsInitOperand(0)->get() == value)
        g = candidate;
  }
  if (!g || g.getNumDpsInits() != 1 || g.getNumLoops() != 1 || g.getNumReductionLoops() != 1 || g.getNumDpsInputs() == 0)
    return w;
  if (g.getStaticLoopRanges()[0] != k || cast<ShapedType>(g.getDpsInitOperand(0)->get().getType()).getRank() != 0)
    return w;
  for (OpOperand* in : g.getDpsInputOperands()) {
    auto arg = dyn_cast<BlockArgument>(in->get());
    auto t = cast<ShapedType>(in->get().getType());
    if (!arg || arg.getOwner() != &entry || t.getRank() != 1 || !t.getElementType().isF32() ||
        !g.getMatchingIndexingMap(in).isIdentity())
      return w;
  }
  Block* body = g.getBlock();
  BlockArgument acc = body->getArguments().back();
  auto combine = body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!combine || !acc.hasOneUse() || (combine.getLhs() != acc && combine.getRhs() != acc) || !acc.getType().isF32())
    return w;
  bool other = false;
  body->walk([&](Operation* op) { other |= IsRead(op) || isa<linalg::IndexOp>(op) || !isPure(op); });
  if (other || !OnlyConstantsAndArguments(g.getRegion(), entry)) return w;
  linalg::FillOp fill;
  if (!buffers) {
    fill = g.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  } else {
    for (Operation* op = g->getPrevNode(); op && !fill; op = op->getPrevNode())
      if (auto f = dyn_cast<linalg::FillOp>(op); f && f.getDpsInitOperand(0)->get() == value) fill = f;
  }
  if (!fill) return w;
  Value init = fill.getInputs()[0];
  if (auto arg = dyn_cast<BlockArgument>(init); !(arg && arg.getOwner() == &entry) && !matchPattern(init, m_Constant()))
    return w;
  w.sum = g, w.combine = combine, w.init = init, w.result = value;
  return w;
}

FailureOr<Roles> FindRoles(func::FuncOp kernel, std::string* why) {
  auto fail = [&](const char* reason) -> FailureOr<Roles> {
    *why = reason;
    return failure();
  };
  Block& entry = kernel.getBody().front();
  Roles r;
  SmallVector<linalg::GenericOp> marked;
  kernel.walk([&](linalg::GenericOp g) {
    if (IsOneRowBlockMatvec(g)) marked.push_back(g);
  });
  if (marked.empty() || marked.size() > 2 || llvm::any_of(marked, [&](linalg::GenericOp g) {
        return g->getBlock() != &entry;
      }))
    return fail("not one block matvec (or two siblings) at the top level");
  r.gemv = marked.front();
  if (marked.size() == 2) r.sibling = Matvec{}, r.sibling->gemv = marked.back();
  r.sum = BlockMatvecSum(r.gemv);
  if (!r.sum) return fail("the block matvec is not out[n] += f(x[b][j], n, b, j)");
  const bool buffers = r.gemv.hasPureBufferSemantics();
  auto out = cast<ShapedType>(r.gemv.getDpsInitOperand(0)->get().getType());
  if (!out.hasStaticShape() || !out.getElementType().isF32()) return fail("the result is not static f32");
  const int64_t rows = out.getDimSize(0);

  // x: a kernel argument, or a reshape of one, or computed by elementwise generics from
  // kernel arguments (each reading at most one earlier one).
  r.x = r.gemv.getDpsInputOperand(0)->get();
  auto xType = cast<ShapedType>(r.x.getType());
  if (!xType.getElementType().isF32()) return fail("x is not f32");
  const int64_t k = xType.getDimSize(0) * xType.getDimSize(1);
  Value xSource = r.x;
  if (Operation* def = xSource.getDefiningOp(); def && isa<tensor::ExpandShapeOp, memref::ExpandShapeOp>(def))
    xSource = def->getOperand(0);
  auto isArgument = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &entry;
  };
  while (!isArgument(xSource)) {
    linalg::GenericOp producer;
    if (!buffers) {
      producer = xSource.getDefiningOp<linalg::GenericOp>();
    } else {
      for (Operation* op = r.gemv->getPrevNode(); op && !producer; op = op->getPrevNode())
        if (auto g = dyn_cast<linalg::GenericOp>(op); g && g.getDpsInitOperand(0)->get() == xSource) producer = g;
    }
    if (!producer || !IsPrologue(producer, k, entry)) return fail("x is computed by other than elementwise ops");
    r.prologue.insert(r.prologue.begin(), producer);
    SmallVector<Value> computed;
    for (Value in : producer.getDpsInputs()) {
      if (isArgument(in)) continue;
      if (cast<ShapedType>(in.getType()).getRank() == 0) {  // a norm's sum, recomputed here
        if (llvm::any_of(r.wholeSums, [&](const WholeSum& w) { return w.result == in; })) continue;
        if (WholeSum w = MatchWholeSum(in, producer, k, entry, buffers); w.sum) {
          r.wholeSums.push_back(w);
          continue;
        }
      }
      computed.push_back(in);
    }
    if (computed.size() > 1) return fail("x's producer reads two computed values");
    if (computed.empty()) break;
    xSource = computed.front();
  }

  // W: every read is of one i8 [N][row bytes] kernel argument at [n, offset(b, j)]; the
  // accumulator filled with a kernel argument or a constant.
  auto weightAndFill = [&](Matvec& m) -> LogicalResult {
    auto bad = [&](const char* reason) {
      *why = reason;
      return failure();
    };
    Block* body = m.gemv.getBlock();
    if (!OnlyConstantsAndArguments(m.gemv.getRegion(), entry)) return bad("the body uses values from the kernel");
    for (Operation& op : body->without_terminator()) {
      if (!IsRead(&op)) {
        if (!isPure(&op)) return bad("the body has side effects");
        continue;
      }
      auto w = dyn_cast<BlockArgument>(ReadSource(&op));
      if (!w || w.getOwner() != &entry || (m.weight && w != m.weight)) return bad("reads other than one weight argument");
      m.weight = w;
      ValueRange indices = ReadIndices(&op);
      auto row = indices.size() == 2 ? indices[0].getDefiningOp<linalg::IndexOp>() : linalg::IndexOp();
      if (!row || row.getDim() != 0) return bad("a weight read is not at row n");
      m.reads.push_back(&op);
    }
    if (!m.weight) return bad("no weight read");
    auto wType = cast<ShapedType>(m.weight.getType());
    if (!wType.hasStaticShape() || wType.getRank() != 2 || !wType.getElementType().isInteger(8) ||
        wType.getDimSize(0) != rows || wType.getDimSize(1) % xType.getDimSize(0) != 0)
      return bad("the weight is not i8 [N][blocks x block bytes]");
    if (!buffers) {
      m.fill = m.acc().getDefiningOp<linalg::FillOp>();
    } else {
      // (Siblings' fills of one value are one after CSE: bufferized, a copy of the filled one.)
      Value filled = m.acc();
      for (Operation* op = m.gemv->getPrevNode(); op && !m.fill; op = op->getPrevNode()) {
        if (auto f = dyn_cast<linalg::FillOp>(op); f && f.getDpsInitOperand(0)->get() == filled) m.fill = f;
        if (auto copy = dyn_cast<memref::CopyOp>(op); copy && copy.getTarget() == filled) filled = copy.getSource();
      }
    }
    if (!m.fill) return bad("the accumulator is not filled");
    m.init = m.fill.getInputs()[0];
    if (auto arg = dyn_cast<BlockArgument>(m.init); !(arg && arg.getOwner() == &entry) && !matchPattern(m.init, m_Constant()))
      return bad("the fill value is computed in the kernel");
    return success();
  };
  if (failed(weightAndFill(r))) return failure();
  if (r.sibling) {
    Matvec& sib = *r.sibling;
    sib.sum = BlockMatvecSum(sib.gemv);
    if (!sib.sum) return fail("the sibling block matvec is not out[n] += f(x[b][j], n, b, j)");
    if (sib.gemv.getDpsInputOperand(0)->get() != r.x) return fail("the sibling block matvec reads another x");
    if (sib.acc().getType() != r.acc().getType()) return fail("the sibling's result differs in shape");
    if (failed(weightAndFill(sib))) return failure();
    if (sib.weight.getType() != r.weight.getType()) return fail("the sibling's weight differs in shape");
  }

  // Elementwise consumers, each of the previous value (the first also of the sibling's).
  Value acc = r.acc();
  Value siblingValue = !r.sibling ? Value() : buffers ? r.sibling->acc() : r.sibling->gemv.getResult(0);
  Value current = buffers ? acc : r.gemv.getResult(0);
  for (Operation* op = r.gemv->getNextNode(); op != entry.getTerminator(); op = op->getNextNode()) {
    if (isa<memref::DeallocOp, memref::SubViewOp, arith::ConstantOp>(op) || IsScalarArith(op)) continue;
    if (r.sibling && (op == r.sibling->gemv || op == r.sibling->fill || isa<tensor::EmptyOp, memref::AllocOp>(op)))
      continue;
    if (auto row = IsRowWrite(op, current, rows, entry)) {  // the KV cache's row
      current = row;
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g) return fail("an op other than elementwise consumers and a row write follows");
    if (!llvm::is_contained(g.getDpsInputs(), current) || !IsEpilogue(g, rows, entry))
      return fail("a consumer is not elementwise over the result");
    if (r.sibling && (r.epilogue.empty() != llvm::is_contained(g.getDpsInputs(), siblingValue)))
      return fail("the sibling is read by other than the first consumer");
    r.epilogue.push_back(g);
    current = buffers ? g.getDpsInitOperand(0)->get() : g.getResult(0);
  }
  if (r.sibling && r.epilogue.empty()) return fail("the sibling's result is not consumed");
  if (buffers) {
    Value written = current;
    if (auto view = written.getDefiningOp<memref::SubViewOp>()) written = view.getSource();
    auto arg = dyn_cast<BlockArgument>(written);
    if (!arg || arg.getOwner() != &entry) return fail("the result is not written to a kernel argument");
  } else {
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    if (ret.getNumOperands() != 1 || ret.getOperand(0) != current || !current.hasOneUse())
      return fail("the kernel does not return the last value");
    for (Operation& op : entry)
      if (!isa<linalg::FillOp, tensor::ExpandShapeOp, tensor::EmptyOp, tensor::InsertSliceOp, arith::ConstantOp,
               func::ReturnOp>(op) &&
          !IsScalarArith(&op) && op.getName() != r.gemv->getName())
        return fail("the kernel computes something else");
    for (Operation& op : entry)
      if (auto g = dyn_cast<linalg::GenericOp>(op);
          g && g != r.gemv && !(r.sibling && g == r.sibling->gemv) && !llvm::is_contained(r.epilogue, g) &&
          !llvm::is_contained(r.prologue, g) &&
          llvm::none_of(r.wholeSums, [&](const WholeSum& w) { return w.sum == g; }))
        return fail("the kernel computes something else");
  }
  r.result = current;
  return r;
}

// offsets[t][r]: the byte group u's value t reads through reads[r], less u * groupBytes,
// checked on the first, second and last group; nullopt when an offset is no such function.
std::optional<std::vector<std::vector<int64_t>>> GroupOffsets(const Matvec& r, const QuantizedGemv& s,
                                                               std::string* why = nullptr) {
  std::vector<std::vector<int64_t>> offsets(s.groupValues(), std::vector<int64_t>(r.reads.size()));
  SmallVector<int64_t> checked = {0};
  if (s.groups() > 1) checked.push_back(1);
  if (s.groups() > 2) checked.push_back(s.groups() - 1);
  for (int64_t t = 0; t < s.groupValues(); ++t)
    for (int64_t u : checked) {
      SmallVector<std::optional<int64_t>> env = {std::nullopt, u * s.groupBlocks + t / s.blockValues,
                                                 t % s.blockValues};
      DenseMap<Value, Attribute> memo;
      for (auto [i, read] : llvm::enumerate(r.reads)) {
        auto at = dyn_cast_or_null<IntegerAttr>(Evaluate(ReadIndices(read)[1], env, memo));
        if (why) *why = "value " + std::to_string(t) + " of group " + std::to_string(u) + ", read " + std::to_string(i);
        if (!at) return std::nullopt;
        int64_t offset = at.getInt() - u * s.groupBytes();
        if (why) *why += ": offset " + std::to_string(offset);
        if (u == 0 && (offset < 0 || offset >= s.groupBytes())) return std::nullopt;
        if (u == 0) offsets[t][i] = offset;
        else if (offsets[t][i] != offset) return std::nullopt;
      }
    }
  return offsets;
}
}  // namespace

namespace {
// How evenly `blocks` spread over the SMs: the average blocks an SM runs over the most any
// runs (1: every SM as busy as the busiest; 176 blocks: 1.33 / 2).
double Spread(int64_t blocks) {
  const int64_t most = (blocks + kSMs - 1) / kSMs;
  return double(blocks) / double(most * kSMs);
}
}  // namespace

namespace {
// Overrides of the chosen launch, for measurements and tests (CUDAQuantizedGemv.h).
llvm::cl::opt<int64_t> lanesFlag("cuda-quantized-gemv-lanes", llvm::cl::Hidden, llvm::cl::init(0),
                                 llvm::cl::desc("lanes a row of every quantized GEMV (1-32, a power of two; 0: chosen)"));
llvm::cl::opt<int64_t> warpsFlag("cuda-quantized-gemv-warps", llvm::cl::Hidden, llvm::cl::init(0),
                                 llvm::cl::desc("warps a block of every quantized GEMV (1-32; 0: chosen)"));
enum class GemvX { kInt8, kF32 };
llvm::cl::opt<GemvX> xFlag("cuda-quantized-gemv-x", llvm::cl::Hidden, llvm::cl::init(GemvX::kInt8),
                           llvm::cl::desc("x of every quantized GEMV"),
                           llvm::cl::values(clEnumValN(GemvX::kInt8, "int8",
                                                       "quantized per 32 values, dp4a dots, where the format allows"),
                                            clEnumValN(GemvX::kF32, "f32", "f32 x, the weights decoded to f32")));
llvm::cl::opt<int64_t> passesFlag("cuda-quantized-gemv-passes", llvm::cl::Hidden, llvm::cl::init(0),
                                  llvm::cl::desc("row passes of every quantized GEMV's blocks (0: chosen)"));
}  // namespace

void ChooseWarps(QuantizedGemv& s) {
  s.passes = 1;
  if (!s.stagesX()) {
    for (s.warps = 8; s.warps > 1 && s.gridBlocks() < kSMs;) s.warps /= 2;
    return;
  }
  // Staged x: at least 4 warps a block share a block's copy; the warps (8, 4) whose grid
  // spreads most evenly (ties: more warps, fewer copies of x). Where 4 warps leave more than
  // three quarters of the SMs idle (the 256-row k/v projections in the K-quants: 16 blocks),
  // 2 and 1 are tried too: more blocks, each staging its own copy of x. H200, session 26,
  // TinyLlama decode: q4_k's k/v in 64 one-warp blocks 0.946x the time a token; q4_0's and
  // q8_0's (64 blocks at 4 warps) in 128 two-warp blocks 1.037x / 1.060x, so they keep 4.
  s.warps = 4;
  const int64_t fewest = s.gridBlocks() < kSMs / 4 ? 1 : 4;
  int64_t best = 8;
  double bestSpread = -1;
  for (int64_t w = 8; w >= fewest; w /= 2) {
    s.warps = w;
    if (Spread(s.gridBlocks()) > bestSpread + 1e-9) best = w, bestSpread = Spread(s.gridBlocks());
  }
  s.warps = best;
}

namespace {
// Sets s.groupBlocks and s.align from its rows, blocks and block size; the reason none fits,
// or null.
const char* ChooseGroup(QuantizedGemv& s) {
  s.groupBlocks = 0;
  for (int64_t g : {8, 4, 2, 1})
    if (s.blocks % g == 0 && g * s.blockBytes <= kMaxGemvGroupBytes &&
        g * s.blockValues <= (g == 1 ? kMaxGemvGroupValues : kMaxGemvGroupValuesOfBlocks)) {
      s.groupBlocks = g;
      break;
    }
  if (s.groupBlocks == 0) return "no group of blocks fits";
  const int64_t rowBytes = s.blocks * s.blockBytes;
  for (s.align = 16; s.align > 1 && (s.groupBytes() % s.align || rowBytes % s.align);) s.align /= 2;
  if (s.groupBytes() / s.align > kMaxGemvGroupLoads) return "too many loads a group";
  return nullptr;
}
}  // namespace

bool QuantizedGemvTakes(int64_t blocks, int64_t blockValues, int64_t blockBytes) {
  QuantizedGemv s;
  s.blocks = blocks, s.blockValues = blockValues, s.blockBytes = blockBytes;
  return blocks > 0 && !ChooseGroup(s) && s.sharedBytes() <= kMaxGemvSharedBytes;
}

std::optional<QuantizedGemv> MatchQuantizedGemv(func::FuncOp kernel) {
  bool marked = false;
  kernel.walk([&](linalg::GenericOp g) { marked |= IsOneRowBlockMatvec(g); });
  if (!marked) return std::nullopt;
  auto refuse = [&](const llvm::Twine& why) -> std::nullopt_t {
    kernel.emitRemark("block matvec kept on the generic kernel: ") << why;
    return std::nullopt;
  };
  std::string why;
  FailureOr<Roles> r = FindRoles(kernel, &why);
  if (failed(r)) return refuse(why);
  auto xType = cast<ShapedType>(r->x.getType());
  auto wType = cast<ShapedType>(r->weight.getType());
  QuantizedGemv s;
  s.rows = wType.getDimSize(0);
  s.blocks = xType.getDimSize(0);
  s.blockValues = xType.getDimSize(1);
  const int64_t rowBytes = wType.getDimSize(1);
  s.blockBytes = rowBytes / s.blocks;
  if (const char* why = ChooseGroup(s)) return refuse(why);
  if (!r->prologue.empty() && !s.stagesX()) return refuse("x too long for shared memory");
  if (!GroupOffsets(*r, s, &why)) return refuse("byte offsets are not the group start plus a constant (" + why + ")");
  if (r->sibling && !GroupOffsets(*r->sibling, s, &why))
    return refuse("the sibling's byte offsets are not the group start plus a constant (" + why + ")");
  // 8-bit x where the format has an int8 dot, the group's loads hold whole words and x fits.
  auto format = r->gemv->getAttrOfType<StringAttr>(kBlockMatvecAttr);
  s.int8X = xFlag == GemvX::kInt8 && format && FindInt8GemvFormat(format.getValue(), s.blockValues, s.blockBytes) &&
            s.align >= 4 && s.groupValues() % kInt8XBlock == 0;
  if (s.int8X && !s.stagesX()) s.int8X = false;
  for (s.lanes = 1; s.lanes < s.groups() && s.lanes < 32;) s.lanes *= 2;
  if (lanesFlag > 0 && lanesFlag <= 32 && (lanesFlag & (lanesFlag - 1)) == 0) s.lanes = lanesFlag;
  ChooseWarps(s);
  if (warpsFlag > 0 && warpsFlag <= 32) s.warps = warpsFlag;
  if (passesFlag > 0) s.passes = std::min<int64_t>(passesFlag, s.rowBlocks());
  return s;
}

void ScheduleQuantizedGemv(func::FuncOp kernel, const QuantizedGemv& s) {
  MLIRContext* ctx = kernel.getContext();
  auto exe = kernel->getParentOfType<ExecutableOp>();
  kernel->setAttr(kQuantizedGemvAttr, DenseI64ArrayAttr::get(ctx, s.encode()));
  kernel->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), -1));  // no guard
  kernel->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), s.threads()));
  exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {s.gridBlocks(), 1, 1}));
  exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {s.threads(), 1, 1}));
}

namespace {
// The importer's term x * w with w = p * q, p * q + c or p * q - c (CUDAGemvDecode.h):
// `scaled` the multiplication p * q, `offset` c; null `scaled` when the term has another form.
struct TermForm {
  arith::MulFOp scaled;
  Value offset;
  bool subtract = false;
};

TermForm FormOf(Value term, Value x) {
  TermForm form;
  auto product = term.getDefiningOp<arith::MulFOp>();
  if (!product || (product.getLhs() == x) == (product.getRhs() == x)) return form;
  Value w = product.getLhs() == x ? product.getRhs() : product.getLhs();
  if (auto add = w.getDefiningOp<arith::AddFOp>()) {
    form.scaled = add.getLhs().getDefiningOp<arith::MulFOp>();
    form.offset = add.getRhs();
    if (!form.scaled) form.scaled = add.getRhs().getDefiningOp<arith::MulFOp>(), form.offset = add.getLhs();
  } else if (auto sub = w.getDefiningOp<arith::SubFOp>()) {
    form.scaled = sub.getLhs().getDefiningOp<arith::MulFOp>();
    form.offset = sub.getRhs();
    form.subtract = true;
  } else {
    form.scaled = w.getDefiningOp<arith::MulFOp>();
  }
  if (!form.scaled) form = TermForm{};
  return form;
}

// Erases `op` and then its operands' defining ops while they have no uses left: pure ops of
// `block` only (the unused conversions a group's decode made in the loop body).
void EraseIfUnused(Operation* op, Block* block) {
  if (!op || op->getBlock() != block || !op->use_empty() || !isPure(op)) return;
  llvm::SetVector<Operation*> operands;
  for (Value v : op->getOperands())
    if (Operation* def = v.getDefiningOp()) operands.insert(def);
  op->erase();
  for (Operation* def : operands) EraseIfUnused(def, block);
}

// Emits the kernel's ops before `b`'s insertion point.
class GemvBuilder {
 public:
  using Offsets = std::vector<std::vector<int64_t>>;
  GemvBuilder(OpBuilder& b, Location loc, Roles& r, const QuantizedGemv& s, const Offsets& offsets,
              const Offsets& siblingOffsets)
      : b(b), loc(loc), r(r), s(s), offsets(offsets), siblingOffsets(siblingOffsets) {}

  // Sums a lane keeps: the block matvec's, and its sibling's where there is one.
  int64_t sums() const { return r.sibling ? 2 : 1; }

  // Group u's bytes of row `row` of W, then of the sibling's W.
  SmallVector<Value> loadGroups(Value row, Value u) {
    SmallVector<Value> loads = loadGroup(r.weight, row, u);
    if (r.sibling) llvm::append_range(loads, loadGroup(r.sibling->weight, row, u));
    return loads;
  }

  // The sums of group u of row `row` from loadGroups' values.
  SmallVector<Value> groupSums(Value row, ValueRange loads, Value u) {
    const int64_t n = loads.size() / sums();
    if (int8Format) {  // x's group read once for both
      Int8XGroup x = LoadInt8XGroup(b, loc, s, xShared, u);
      SmallVector<Value> out = {Int8GroupSum(b, loc, *int8Format, s, loads.take_front(n), x)};
      if (r.sibling) out.push_back(Int8GroupSum(b, loc, *int8Format, s, loads.drop_front(n), x));
      return out;
    }
    SmallVector<Value> out = {groupSum(row, loads.take_front(n), u, r, offsets)};
    if (r.sibling) out.push_back(groupSum(row, loads.drop_front(n), u, *r.sibling, siblingOffsets));
    return out;
  }

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value constant(Attribute a) { return arith::ConstantOp::create(b, loc, cast<TypedAttr>(a)); }

  // The type of one load of the group's bytes (i8, or a vector of `align` of them).
  Type loadType() {
    return s.align == 1 ? Type(b.getI8Type()) : Type(VectorType::get({s.align}, b.getI8Type()));
  }

  // Group u's bytes of row `row`: vector loads of `align` bytes, all issued together.
  SmallVector<Value> loadGroup(Value weight, Value row, Value u) {
    const int64_t A = s.align;
    Value base = arith::MulIOp::create(b, loc, u, idx(s.groupBytes()));
    SmallVector<Value> loads;
    for (int64_t at = 0; at < s.groupBytes(); at += A) {
      Value col = arith::AddIOp::create(b, loc, base, idx(at));
      if (A == 1) {
        loads.push_back(memref::LoadOp::create(b, loc, weight, ValueRange{row, col}));
      } else {
        loads.push_back(vector::LoadOp::create(b, loc, cast<VectorType>(loadType()), weight,
                                               ValueRange{row, col}, /*nontemporal=*/false, llvm::MaybeAlign(A)));
      }
    }
    return loads;
  }

  // The sum of group u's terms of matvec mv's row `row` from its loaded bytes and x.
  Value groupSum(Value row, ValueRange loads, Value u, Matvec& mv, const Offsets& byteOffsets) {
    const int64_t A = s.align;
    DenseMap<int64_t, Value> bytes, blockIndex, xs;
    auto byte = [&](int64_t c) -> Value {
      Value& v = bytes[c];
      if (!v) v = A == 1 ? loads[c] : Value(vector::ExtractOp::create(b, loc, loads[c / A], c % A));
      return v;
    };
    auto blockOf = [&](int64_t t) -> Value {  // u G + t / B
      Value& v = blockIndex[t / s.blockValues];
      if (!v)
        v = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, u, idx(s.groupBlocks)),
                                  idx(t / s.blockValues));
      return v;
    };
    auto xType = dyn_cast<MemRefType>(r.x.getType());
    const bool xVectors = xType && xType.getLayout().isIdentity() && s.blockValues % 4 == 0;
    auto xAt = [&](int64_t t) -> Value {
      const int64_t j = t % s.blockValues;
      if (xShared) {
        Value& v = xs[t / 4];
        if (!v) {
          Value at = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, u, idx(s.sharedGroupStride())),
                                           idx(t - t % 4));
          v = vector::LoadOp::create(b, loc, VectorType::get({4}, b.getF32Type()), xShared, ValueRange{at}, false,
                                     llvm::MaybeAlign(16));
        }
        return vector::ExtractOp::create(b, loc, v, t % 4);
      }
      if (!xVectors) return memref::LoadOp::create(b, loc, r.x, ValueRange{blockOf(t), idx(j)});
      Value& v = xs[t / 4];
      if (!v)
        v = vector::LoadOp::create(b, loc, VectorType::get({4}, b.getF32Type()), r.x,
                                   ValueRange{blockOf(t), idx(j - j % 4)}, false, llvm::MaybeAlign(16));
      return vector::ExtractOp::create(b, loc, v, t % 4);
    };

    Block* body = mv.gemv.getBlock();
    BlockArgument accArg = body->getArgument(1);
    Value termValue = mv.sum.getLhs() == accArg ? mv.sum.getRhs() : mv.sum.getLhs();
    TermForm form = FormOf(termValue, body->getArgument(0));
    CseCloner cse(b);
    std::map<std::pair<const void*, bool>, Value> converted;
    ByteFieldConverter fields(b);
    DenseMap<Value, std::pair<Value, int64_t>> inPlace;  // converted -> (scaled in place, log2 scale)
    std::vector<DecodedTerm> terms;
    for (int64_t t = 0; t < s.groupValues(); ++t) {
      SmallVector<std::optional<int64_t>> env = {std::nullopt, std::nullopt, t % s.blockValues};
      DenseMap<Value, Attribute> memo;
      IRMapping m;
      m.map(body->getArgument(0), xAt(t));
      for (Operation& op : body->without_terminator()) {
        if (&op == mv.sum.getOperation()) continue;
        if (auto read = llvm::find(mv.reads, &op); read != mv.reads.end()) {
          m.map(op.getResult(0), byte(byteOffsets[t][read - mv.reads.begin()]));
          continue;
        }
        if (auto index = dyn_cast<linalg::IndexOp>(op)) {
          Value dims[] = {row, blockOf(t), Value()};
          m.map(index.getResult(), index.getDim() == 2 ? idx(t % s.blockValues) : dims[index.getDim()]);
          continue;
        }
        SmallVector<Attribute> known;
        for (Value v : op.getResults()) known.push_back(Evaluate(v, env, memo));
        if (llvm::all_of(known, [](Attribute a) { return a != nullptr; })) {
          for (auto [v, a] : llvm::zip(op.getResults(), known)) m.map(v, cse.constant(a, loc));
          continue;
        }
        for (Value operand : op.getOperands())
          if (!m.contains(operand))
            if (Attribute a = Evaluate(operand, env, memo)) m.map(operand, cse.constant(a, loc));
        if (isa<arith::SIToFPOp, arith::UIToFPOp>(op) && op.getResult(0).getType().isF32()) {
          const bool isSigned = isa<arith::SIToFPOp>(op);
          Value in = m.lookupOrDefault(op.getOperand(0));
          if (FitsExponentTrick(in, isSigned)) {  // once per integer (a sub-block's scale: once)
            Value& f = converted[{in.getAsOpaquePointer(), isSigned}];
            if (!f) f = SmallIntToF32(b, loc, in, isSigned);
            m.map(op.getResult(0), f);
            // A field of a loaded word (a nibble): also converted in place, scaled, for use
            // as a factored term's v (the conversion above then goes unused and is erased).
            if (std::optional<ByteField> field = MatchByteField(in); field && !inPlace.count(f))
              inPlace[f] = fields.convert(*field, loc);
            continue;
          }
        }
        cse.clone(op, m);
      }
      DecodedTerm term;
      term.whole = m.lookup(termValue);
      if (form.scaled) {
        term.x = m.lookup(body->getArgument(0));
        term.a = m.lookupOrDefault(form.scaled.getLhs());
        term.v = m.lookupOrDefault(form.scaled.getRhs());
        if (form.offset) term.c = m.lookupOrDefault(form.offset);
        term.subtract = form.subtract;
      }
      terms.push_back(term);
    }
    // a: the factor shared by more values (the fewer distinct Values across the group).
    llvm::DenseSet<Value> lhs, rhs;
    for (const DecodedTerm& t : terms)
      if (t.factored()) lhs.insert(t.a), rhs.insert(t.v);
    if (rhs.size() < lhs.size())
      for (DecodedTerm& t : terms) std::swap(t.a, t.v);
    for (DecodedTerm& t : terms)
      if (auto it = inPlace.find(t.v); t.factored() && it != inPlace.end())
        std::tie(t.v, t.scaleLog2) = it->second;
    Value sum = FactoredSum(b, loc, terms);
    // What the in-place conversions replaced (and any of them left unused) goes.
    SmallVector<Operation*> dead;
    for (auto& [from, to] : inPlace) dead.push_back(from.getDefiningOp()), dead.push_back(to.first.getDefiningOp());
    for (Operation* op : dead) EraseIfUnused(op, b.getInsertionBlock());
    return sum;
  }

  // Element `at` of elementwise generic `g` whose input `previous` (a buffer, or null) holds
  // `value` there: the other inputs loaded (rank 0: the one element), the body cloned.
  // (`other`, or null, holds `otherValue` there: the sibling's result.)
  Value elementwise(linalg::GenericOp g, Value at, Value previous, Value value, Value other = {},
                    Value otherValue = {}) {
    Block* body = g.getBlock();
    IRMapping m;
    for (auto [i, in] : llvm::enumerate(g.getDpsInputs())) {
      Value element = value;
      if (Value sum = wholeSums.lookup(in)) {
        element = sum;
      } else if (other && in == other) {
        element = otherValue;
      } else if (in != previous) {
        SmallVector<Value> indices;
        if (cast<ShapedType>(in.getType()).getRank() == 1) indices.push_back(at);
        element = memref::LoadOp::create(b, loc, in, indices);
      }
      m.map(body->getArgument(i), element);
    }
    cloneBody(body, m, at);
    return m.lookup(body->getTerminator()->getOperand(0));
  }

  // Clones `body`'s ops but its terminator and `skip` at the insertion point (`m` maps its
  // arguments): a linalg.index becomes `at`, constants from above are made here.
  void cloneBody(Block* body, IRMapping& m, Value at, Operation* skip = nullptr) {
    for (Operation& op : body->without_terminator()) {
      if (&op == skip) continue;
      if (auto index = dyn_cast<linalg::IndexOp>(op)) {
        m.map(index.getResult(), at);
        continue;
      }
      for (Value operand : op.getOperands())
        if (!m.contains(operand) && !isa<BlockArgument>(operand))
          if (Attribute a; matchPattern(operand, m_Constant(&a))) m.map(operand, constant(a));
      b.clone(op, m);
    }
  }

  // x's element `at` through the prologue.
  Value prologue(Value at) {
    Value previous, value;
    for (linalg::GenericOp g : r.prologue) {
      value = elementwise(g, at, previous, value);
      previous = g.getDpsInitOperand(0)->get();
    }
    return value;
  }

  // The row's value (and its sibling's, or null) through the fused consumers, then stored.
  void epilogueAndStore(Value value, Value siblingValue, Value row) {
    Value current = r.gemv.getDpsInitOperand(0)->get();
    for (linalg::GenericOp g : r.epilogue) {
      value = elementwise(g, row, current, value, r.sibling ? r.sibling->acc() : Value(), siblingValue);
      current = g.getDpsInitOperand(0)->get();
    }
    memref::StoreOp::create(b, loc, value, r.result, ValueRange{row});
  }

  // Each whole sum's total (EmitBlockSum), by the value the prologue reads.
  void computeWholeSums(func::FuncOp kernel, Value tid) {
    const int64_t K = s.blocks * s.blockValues;
    for (WholeSum& w : r.wholeSums) {
      Block* body = w.sum.getBlock();
      Value term = w.combine.getLhs() == body->getArguments().back() ? w.combine.getRhs() : w.combine.getLhs();
      auto load = [&](Value at) {
        SmallVector<Value> values;
        for (Value in : w.sum.getDpsInputs()) values.push_back(memref::LoadOp::create(b, loc, in, ValueRange{at}));
        return values;
      };
      auto termOf = [&](ValueRange loaded) {
        IRMapping m;
        for (auto [arg, v] : llvm::zip(body->getArguments().drop_back(), loaded)) m.map(arg, v);
        cloneBody(body, m, /*at=*/Value(), w.combine);  // (no linalg.index: MatchWholeSum)
        return m.lookup(term);
      };
      Value total = EmitBlockSum(b, loc, kernel, tid, s.threads(), K, load, termOf);
      Value init = w.init;
      if (Attribute a; matchPattern(init, m_Constant(&a))) init = constant(a);
      wholeSums[w.result] = w.combine.getLhs() == body->getArguments().back()
                                ? arith::AddFOp::create(b, loc, init, total).getResult()
                                : arith::AddFOp::create(b, loc, total, init).getResult();
    }
  }

  DenseMap<Value, Value> wholeSums;  // computeWholeSums' totals
  Value xShared;  // x staged in shared memory (padded: QuantizedGemv::sharedGroupStride), or null
  const Int8GemvFormat* int8Format = nullptr;  // where x is staged in 8 bits (s.int8X)
  OpBuilder& b;
  Location loc;
  Roles& r;
  const QuantizedGemv& s;
  const Offsets& offsets;
  const Offsets& siblingOffsets;  // empty without a sibling
};
}  // namespace

SmallVector<unsigned> QuantizedGemvWeights(func::FuncOp kernel) {
  std::string why;
  FailureOr<Roles> found = FindRoles(kernel, &why);
  if (failed(found)) return {};
  SmallVector<unsigned> weights{found->weight.getArgNumber()};
  if (found->sibling) weights.push_back(found->sibling->weight.getArgNumber());
  return weights;
}

LogicalResult LowerQuantizedGemv(func::FuncOp kernel, const QuantizedGemv& s) {
  std::string why;
  FailureOr<Roles> found = FindRoles(kernel, &why);
  if (failed(found)) return kernel.emitError("internal: quantized GEMV kernel: ") << why;
  Roles& r = *found;
  if (!r.gemv.hasPureBufferSemantics()) return kernel.emitError("internal: quantized GEMV not bufferized");
  std::optional<std::vector<std::vector<int64_t>>> offsets = GroupOffsets(r, s);
  if (!offsets) return kernel.emitError("internal: quantized GEMV offsets changed after bufferization");
  std::optional<std::vector<std::vector<int64_t>>> siblingOffsets;
  if (r.sibling && !(siblingOffsets = GroupOffsets(*r.sibling, s)))
    return kernel.emitError("internal: quantized GEMV sibling's offsets changed after bufferization");
  if (!siblingOffsets) siblingOffsets.emplace();

  Block& entry = kernel.getBody().front();
  Operation* ret = entry.getTerminator();
  SmallVector<Operation*> old;
  for (Operation& op : entry)
    if (&op != ret) old.push_back(&op);
  OpBuilder b(ret);
  Location loc = r.gemv.getLoc();
  GemvBuilder k(b, loc, r, s, *offsets, *siblingOffsets);
  const int64_t L = s.lanes;

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lane32 = arith::RemUIOp::create(b, loc, tid, k.idx(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, k.idx(32));
  Value lane = arith::RemUIOp::create(b, loc, lane32, k.idx(L));
  // The lane's row in its block's rows: warp (32 / L) + lane32 / L; pass p's row:
  // (p gridBlocks + bid) R + that. Loads use min(row, N - 1).
  Value slot = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, warp, k.idx(32 / L)),
                                     arith::DivUIOp::create(b, loc, lane32, k.idx(L)));
  auto rowOf = [&](Value pass) -> Value {
    Value blockRow = bid;
    if (pass)
      blockRow = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, pass, k.idx(s.gridBlocks())), bid);
    return arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, blockRow, k.idx(s.rowsPerBlock())), slot);
  };
  auto loadRowOf = [&](Value row) -> Value { return arith::MinUIOp::create(b, loc, row, k.idx(s.rows - 1)); };

  // x staged in shared memory, each group's values followed by 4 unused ones (the padding
  // puts the 16-byte reads of a row's lanes, one group apart, in different banks).
  auto padded = [&](Value at) {
    Value group = arith::DivUIOp::create(b, loc, at, k.idx(s.groupValues()));
    return arith::AddIOp::create(b, loc, at, arith::MulIOp::create(b, loc, group, k.idx(kGemvSharedPad))).getResult();
  };
  // The lane's first group's bytes, issued before x is staged (their latency overlaps the
  // copy and the barrier); lanes without a group load the last one and use nothing of it.
  Value firstGroup = arith::MinUIOp::create(b, loc, lane, k.idx(s.groups() - 1));
  Value firstRow = rowOf(Value());
  SmallVector<Value> firstLoads = k.loadGroups(loadRowOf(firstRow), firstGroup);
  const int64_t K = s.blocks * s.blockValues;
  k.computeWholeSums(kernel, tid);  // a recomputed norm's sum, before x is staged through it
  if (s.int8X) {  // every thread quantizes 8-value pieces of x (CUDAQuantizedGemvInt8.h)
    auto name = r.gemv->getAttrOfType<StringAttr>(kBlockMatvecAttr);
    k.int8Format = name ? FindInt8GemvFormat(name.getValue(), s.blockValues, s.blockBytes) : nullptr;
    if (!k.int8Format) return kernel.emitError("internal: quantized GEMV with 8-bit x of a format without an int8 dot");
    k.xShared = WorkgroupArray(b, loc, kernel, b.getI32Type(), s.sharedBytes() / 4);
    auto xType = dyn_cast<MemRefType>(r.x.getType());
    const bool vectors = xType && xType.getLayout().isIdentity();
    auto eight = [&](Value at) {
      SmallVector<Value> values;
      if (!r.prologue.empty()) {
        for (int64_t i = 0; i < 8; ++i) values.push_back(k.prologue(arith::AddIOp::create(b, loc, at, k.idx(i))));
        return values;
      }
      Value block = arith::DivUIOp::create(b, loc, at, k.idx(s.blockValues));
      Value j = arith::RemUIOp::create(b, loc, at, k.idx(s.blockValues));
      for (int64_t i = 0; i < 8; i += vectors ? 4 : 1) {
        Value ji = arith::AddIOp::create(b, loc, j, k.idx(i));
        if (!vectors) {
          values.push_back(memref::LoadOp::create(b, loc, r.x, ValueRange{block, ji}));
          continue;
        }
        Value four = vector::LoadOp::create(b, loc, VectorType::get({4}, b.getF32Type()), r.x, ValueRange{block, ji},
                                            false, llvm::MaybeAlign(16));
        for (int64_t l = 0; l < 4; ++l) values.push_back(vector::ExtractOp::create(b, loc, four, l));
      }
      return values;
    };
    StageInt8X(b, loc, s, k.xShared, tid, eight);
    gpu::BarrierOp::create(b, loc);
  } else if (!r.prologue.empty()) {  // every thread computes a share of x
    k.xShared = WorkgroupArray(b, loc, kernel, b.getF32Type(), s.sharedBytes() / 4);
    auto fill = scf::ForOp::create(b, loc, tid, k.idx(K), k.idx(s.threads()));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(fill.getBody()->getTerminator());
      Value at = fill.getInductionVar();
      memref::StoreOp::create(b, loc, k.prologue(at), k.xShared, ValueRange{padded(at)});
    }
    gpu::BarrierOp::create(b, loc);
  } else if (auto xType = dyn_cast<MemRefType>(r.x.getType());
             s.stagesX() && s.blockValues % 4 == 0 && xType && xType.getLayout().isIdentity()) {  // every thread copies 16-byte pieces of x
    k.xShared = WorkgroupArray(b, loc, kernel, b.getF32Type(), s.sharedBytes() / 4);
    auto vec4 = VectorType::get({4}, b.getF32Type());
    // Piece q (of K / 4) is thread q % T's, its (q / T)th; a thread loads up to 8 of its
    // pieces, then stores them (one wait for L2 per 8 pieces, not per piece).
    const int64_t pieces = K / 4, T = s.threads();
    const int64_t perThread = (pieces + T - 1) / T;
    const int64_t unroll = std::min<int64_t>(perThread, 8);
    const int64_t chunks = (perThread + unroll - 1) / unroll;
    auto copyChunk = [&](Value first, bool known) {  // first: the chunk's first piece of thread 0
      SmallVector<std::pair<Value, Value>> loaded;  // (piece, value)
      SmallVector<bool> always;
      for (int64_t i = 0; i < unroll; ++i) {
        if (known && i * T >= pieces) break;
        Value q = arith::AddIOp::create(b, loc, arith::AddIOp::create(b, loc, first, tid), k.idx(i * T));
        const bool inside = known && (i + 1) * T <= pieces;
        Value at = arith::MulIOp::create(b, loc, inside ? q : arith::MinUIOp::create(b, loc, q, k.idx(pieces - 1)),
                                         k.idx(4));
        Value block = arith::DivUIOp::create(b, loc, at, k.idx(s.blockValues));
        Value j = arith::RemUIOp::create(b, loc, at, k.idx(s.blockValues));
        loaded.push_back({q, vector::LoadOp::create(b, loc, vec4, r.x, ValueRange{block, j}, false, llvm::MaybeAlign(16))});
        always.push_back(inside);
      }
      for (auto [i, piece] : llvm::enumerate(loaded)) {
        auto [q, value] = piece;
        OpBuilder::InsertionGuard guard(b);
        if (!always[i]) {
          Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, q, k.idx(pieces));
          auto guarded = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
          b.setInsertionPoint(guarded.thenBlock()->getTerminator());
        }
        Value at = arith::MulIOp::create(b, loc, q, k.idx(4));
        vector::StoreOp::create(b, loc, value, k.xShared, ValueRange{padded(at)}, false, llvm::MaybeAlign(16));
      }
    };
    if (chunks == 1) {
      copyChunk(k.idx(0), /*known=*/true);
    } else {
      auto copy = scf::ForOp::create(b, loc, k.idx(0), k.idx(chunks * unroll * T), k.idx(unroll * T));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(copy.getBody()->getTerminator());
      copyChunk(copy.getInductionVar(), /*known=*/false);
    }
    gpu::BarrierOp::create(b, loc);
  }
  // Software-pipelined over the lane's groups (where a lane has more than one, or there are
  // several passes): each iteration issues the next group's loads (this row's next group,
  // else the next pass's first) before decoding the current one's, so a lane's bytes in
  // flight overlap its arithmetic.
  const bool pipelined = s.groups() > L || s.passes > 1;
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  // One pass (`pass` null: the only one) over `row`, its first group's loads `loads`; the
  // loads it leaves in flight (the next pass's first group's).
  auto onePass = [&](Value pass, Value row, ValueRange loads) -> SmallVector<Value> {
    Value loadRow = loadRowOf(row);
    const int64_t S = k.sums();
    SmallVector<Value> carried(S, zero);
    if (pipelined) llvm::append_range(carried, loads);
    auto loop = scf::ForOp::create(b, loc, lane, k.idx(s.groups()), k.idx(L), carried);
    {
      OpBuilder::InsertionGuard guard(b);
      Block* loopBody = loop.getBody();
      if (loopBody->mightHaveTerminator()) loopBody->getTerminator()->erase();
      b.setInsertionPointToEnd(loopBody);
      Value u = loop.getInductionVar();
      auto added = [&](ValueRange sums) {  // the running sums plus the group's
        SmallVector<Value> out;
        for (auto [running, sum] : llvm::zip(loop.getRegionIterArgs().take_front(S), sums))
          out.push_back(arith::AddFOp::create(b, loc, running, sum));
        return out;
      };
      if (!pipelined) {  // one group at most: its loads are the first ones
        scf::YieldOp::create(b, loc, added(k.groupSums(loadRow, loads, u)));
      } else {
        ValueRange current = loop.getRegionIterArgs().drop_front(S);
        Value nextU = arith::AddIOp::create(b, loc, u, k.idx(L));
        Value hasNext = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, nextU, k.idx(s.groups()));
        SmallVector<Type> loadTypes(current.size(), k.loadType());
        auto next = scf::IfOp::create(b, loc, loadTypes, hasNext, /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToStart(next.thenBlock());
          scf::YieldOp::create(b, loc, k.loadGroups(loadRow, nextU));
          b.setInsertionPointToStart(next.elseBlock());
          if (pass) {  // the next pass's first group, where there is a next pass
            Value nextPass = arith::AddIOp::create(b, loc, pass, k.idx(1));
            Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, nextPass, k.idx(s.passes));
            auto following = scf::IfOp::create(b, loc, loadTypes, more, /*withElseRegion=*/true);
            b.setInsertionPointToStart(following.thenBlock());
            scf::YieldOp::create(b, loc, k.loadGroups(loadRowOf(rowOf(nextPass)), firstGroup));
            b.setInsertionPointToStart(following.elseBlock());
            scf::YieldOp::create(b, loc, current);
            b.setInsertionPointAfter(following);
            scf::YieldOp::create(b, loc, following.getResults());
          } else {
            scf::YieldOp::create(b, loc, current);
          }
        }
        SmallVector<Value> yielded = added(k.groupSums(loadRow, current, u));
        llvm::append_range(yielded, next.getResults());
        scf::YieldOp::create(b, loc, yielded);
      }
    }
    SmallVector<Value> partials(loop.getResults().take_front(S));
    cuda::XorButterfly(b, loc, partials, L, [&](Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); });
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, k.idx(s.rows));
    Value first = arith::AndIOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, k.idx(0)), inRange);
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
      auto initialized = [&](Matvec& m, Value partial) -> Value {  // in the body's order
        Value init = m.init;
        if (Attribute a; matchPattern(init, m_Constant(&a))) init = k.constant(a);
        if (m.sum.getLhs() == m.gemv.getBlock()->getArgument(1)) return arith::AddFOp::create(b, loc, init, partial);
        return arith::AddFOp::create(b, loc, partial, init);
      };
      k.epilogueAndStore(initialized(r, partials[0]), r.sibling ? initialized(*r.sibling, partials[1]) : Value(), row);
    }
    SmallVector<Value> left;
    if (pipelined) llvm::append_range(left, loop.getResults().drop_front(S));
    return left;
  };
  if (s.passes == 1) {
    onePass(Value(), firstRow, firstLoads);
  } else {
    auto passes = scf::ForOp::create(b, loc, k.idx(0), k.idx(s.passes), k.idx(1), firstLoads);
    OpBuilder::InsertionGuard guard(b);
    Block* passBody = passes.getBody();
    if (passBody->mightHaveTerminator()) passBody->getTerminator()->erase();
    b.setInsertionPointToEnd(passBody);
    Value pass = passes.getInductionVar();
    SmallVector<Value> left = onePass(pass, rowOf(pass), passes.getRegionIterArgs());
    scf::YieldOp::create(b, loc, left);
  }
  // What the new body still reads (x's reshape) stays.
  for (Operation* op : llvm::reverse(old))
    if (op->use_empty()) op->erase();
  return success();
}

}  // namespace hexir::cuda
