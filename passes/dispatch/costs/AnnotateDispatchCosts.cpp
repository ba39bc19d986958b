// Dispatch cost metadata: what each kernel must move and compute, for hexir-bench's roofline
// and its matmul baselines. Counted on linalg-on-tensors before codegen, where the op
// structure (iteration domain, body, contraction dims) is still explicit.
#include <map>
#include <optional>
#include <string>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/dispatch/costs/CostPasses.h"

namespace hexir {
#define GEN_PASS_DEF_ANNOTATEDISPATCHCOSTS
#define GEN_PASS_DEF_ATTACHDISPATCHCOSTS
#include "passes/dispatch/costs/CostPasses.h.inc"

namespace {
using namespace mlir;

// A polynomial kept as "constant x product of symbols" terms; all-static sums fold.
struct Cost {
  std::map<std::string, int64_t> terms;  // symbol product ("" = constant) -> coefficient
  void add(int64_t coefficient, const std::string& symbols) {
    if (coefficient) terms[symbols] += coefficient;
  }
  void addScaled(const Cost& other, int64_t factor) {
    for (auto& [sym, c] : other.terms) add(c * factor, sym);
  }
  bool isStatic() const { return terms.empty() || (terms.size() == 1 && terms.count("")); }
  std::string value() const {
    if (!isStatic()) return "?";
    return std::to_string(terms.empty() ? 0 : terms.begin()->second);
  }
  std::string formula() const {
    std::string s;
    for (auto& [sym, c] : terms) {
      if (!s.empty()) s += " + ";
      s += std::to_string(c);
      if (!sym.empty()) s += "*" + sym;
    }
    return s.empty() ? "0" : s;
  }
};

int64_t elementBytes(Type t) {
  unsigned bits = t.isIntOrIndexOrFloat() ? t.getIntOrFloatBitWidth() : 64;
  if (isa<IndexType>(t)) bits = 64;
  return (bits + 7) / 8;
}

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

// The symbol of dim `d` of kernel argument `arg` in a formula ("aIdJ"; CPUWorkWords.h reads it).
std::string argDimSymbol(int64_t arg, int64_t d) { return "a" + std::to_string(arg) + "d" + std::to_string(d); }

// Bytes of a tensor that is kernel argument `arg` (or a result, arg < 0: dynamic dims unknown).
Cost tensorBytes(RankedTensorType t, int arg) {
  Cost c;
  int64_t n = elementBytes(t.getElementType());
  std::string syms;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (!t.isDynamicDim(d)) {
      n *= t.getDimSize(d);
    } else {
      syms += (syms.empty() ? "" : "*") +
              (arg >= 0 ? argDimSymbol(arg, d)
                        : "r" + std::to_string(-arg - 1) + "d" + std::to_string(d));
    }
  }
  c.add(n, syms);
  return c;
}

// Arithmetic ops per iteration of a linalg body: arith/math compute ops; casts, constants,
// index ops and the yield cost nothing.
int64_t bodyOps(linalg::LinalgOp op) {
  int64_t n = 0;
  for (Operation& inner : *op.getBlock()) {
    Dialect* d = inner.getDialect();
    if (!d || (d->getNamespace() != "arith" && d->getNamespace() != "math")) continue;
    if (isa<arith::ConstantOp, arith::ExtFOp, arith::TruncFOp, arith::ExtSIOp, arith::ExtUIOp,
            arith::TruncIOp, arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp,
            arith::BitcastOp, arith::IndexCastOp, arith::IndexCastUIOp>(inner))
      continue;
    ++n;
  }
  return n;
}

// The extent of dim `r` of `v` inside `kernel`'s body as a number or a symbol: dim r of a
// tensor argument I ("aIdr"), or an index argument I ("aI") that sized the tensor.empty the
// value was built on, following destination-style results to their inits (a fill or a bias
// generic on an empty output) and tensor.dim of arguments; "" where it is none of these.
std::string dimExtent(Value v, int64_t r, func::FuncOp kernel) {
  Block* body = &kernel.getBody().front();
  for (int depth = 0; depth < 32; ++depth) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || r >= t.getRank()) return "";
    if (!t.isDynamicDim(r)) return std::to_string(t.getDimSize(r));
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == body ? argDimSymbol(arg.getArgNumber(), r) : "";
    Operation* def = v.getDefiningOp();
    if (auto empty = dyn_cast<tensor::EmptyOp>(def)) {
      Value size = empty.getDynamicSize(r);
      if (auto arg = dyn_cast<BlockArgument>(size))
        return arg.getOwner() == body ? "a" + std::to_string(arg.getArgNumber()) : "";
      auto dim = size.getDefiningOp<tensor::DimOp>();
      std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
      if (!index) return "";
      v = dim.getSource();
      r = *index;
      continue;
    }
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
      v = dps.getTiedOpOperand(cast<OpResult>(v))->get();
      continue;
    }
    if (auto cast = dyn_cast<tensor::CastOp>(def)) {
      v = cast.getSource();
      continue;
    }
    return "";
  }
  return "";
}

// Each loop's extent: static, or the extent (dimExtent) of an operand dimension it iterates.
SmallVector<std::string> loopExtents(linalg::LinalgOp op, func::FuncOp kernel, bool* ok) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<std::string> out(ranges.size());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (size_t l = 0; l < ranges.size(); ++l) {
    if (!ShapedType::isDynamic(ranges[l])) {
      out[l] = std::to_string(ranges[l]);
      continue;
    }
    for (OpOperand& operand : op->getOpOperands()) {
      AffineMap map = maps[operand.getOperandNumber()];
      for (unsigned r = 0; r < map.getNumResults() && out[l].empty(); ++r) {
        auto dim = dyn_cast<AffineDimExpr>(map.getResult(r));
        if (dim && dim.getPosition() == l) out[l] = dimExtent(operand.get(), r, kernel);
      }
      if (!out[l].empty()) break;
    }
    if (out[l].empty()) *ok = false;
  }
  return out;
}

// Multiplies extents: numbers fold, symbols join with '*'.
std::pair<int64_t, std::string> product(ArrayRef<std::string> extents) {
  int64_t n = 1;
  std::string syms;
  for (const std::string& e : extents) {
    if (!e.empty() && std::isdigit(static_cast<unsigned char>(e[0]))) {
      n *= std::stoll(e);
    } else {
      syms += (syms.empty() ? "" : "*") + e;
    }
  }
  return {n, syms};
}

// Bytes a kernel writes into output argument `out` when the value it returns for it is a
// chain of tensor.insert_slice ops ending at `out` itself (a row written into a KV cache in
// place): the inserted sources' bytes, since the rest of `out` is left as it was. Nullopt
// when the result is anything else or a source has a dynamic shape (the whole tensor counts).
std::optional<Cost> insertedSliceBytes(Value result, BlockArgument out) {
  Cost bytes;
  Value v = result;
  while (auto insert = v.getDefiningOp<tensor::InsertSliceOp>()) {
    RankedTensorType source = insert.getSourceType();
    if (!source.hasStaticShape()) return std::nullopt;
    bytes.addScaled(tensorBytes(source, -1), 1);
    v = insert.getDest();
  }
  if (v != out || v == result) return std::nullopt;
  return bytes;
}

class AnnotateDispatchCosts : public impl::AnnotateDispatchCostsBase<AnnotateDispatchCosts> {
 public:
  void runOnOperation() override {
    for (auto exe : getOperation().getOps<ExecutableOp>()) annotate(exe);
  }

 private:
  void annotate(ExecutableOp exe) {
    ModuleOp inner = exe.getInnerModule();
    if (!inner) return;
    auto kernel = inner.lookupSymbol<func::FuncOp>(exe.getSymName());
    if (!kernel || kernel.isExternal()) return;
    std::string entry = exe.getSymName().str();
    // Tensor arguments: inputs first, then one output per result (not read).
    FunctionType ft = kernel.getFunctionType();
    int tensors = 0;
    for (Type t : ft.getInputs()) tensors += isa<RankedTensorType>(t);
    int inputs = tensors - static_cast<int>(ft.getNumResults());
    Cost read, written, flops;
    int seen = 0;
    // Inputs the body never uses (the input a result is tied to, in place) are not read.
    Block& body = kernel.getBody().front();
    for (auto [i, t] : llvm::enumerate(ft.getInputs())) {
      auto rt = dyn_cast<RankedTensorType>(t);
      if (!rt) continue;
      if (seen++ < inputs && !body.getArgument(i).use_empty())
        read.addScaled(tensorBytes(rt, static_cast<int>(i)), 1);
    }
    // Outputs: their argument's dims (the kernel writes into its output arguments), or only
    // the slices it inserts into one in place.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    seen = 0;
    for (auto [i, t] : llvm::enumerate(ft.getInputs())) {
      auto rt = dyn_cast<RankedTensorType>(t);
      if (!rt) continue;
      if (seen++ < inputs) continue;
      int result = seen - 1 - inputs;
      std::optional<Cost> slices;
      if (result < static_cast<int>(ret.getNumOperands()))
        slices = insertedSliceBytes(ret.getOperand(result), body.getArgument(i));
      written.addScaled(slices ? *slices : tensorBytes(rt, static_cast<int>(i)), 1);
    }
    bool flopsKnown = true;
    std::string ops, matmul;
    kernel.walk([&](linalg::LinalgOp op) {
      ops += (ops.empty() ? "" : ",") + op->getName().stripDialect().str();
      if (isa<linalg::FillOp>(op)) return;
      bool ok = true;
      SmallVector<std::string> extents = loopExtents(op, kernel, &ok);
      flopsKnown &= ok;
      if (ok) {
        auto [n, syms] = product(extents);
        flops.add(n * bodyOps(op), syms);
      }
      if (!matmul.empty() || !linalg::isaContractionOpInterface(op)) return;
      FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
      if (failed(dims)) return;
      auto extent = [&](ArrayRef<unsigned> loops) -> std::string {
        if (!ok) return "?";
        SmallVector<std::string> es;
        for (unsigned l : loops) es.push_back(extents[l]);
        auto [n, syms] = product(es);
        return syms.empty() ? std::to_string(n) : "?";
      };
      auto elem = [&](Value v) { return typeName(getElementTypeOrSelf(v.getType())); };
      matmul = "M=" + extent(dims->m) + ",N=" + extent(dims->n) + ",K=" + extent(dims->k) +
               ",B=" + extent(dims->batch) + ",lhs=" + elem(op.getDpsInputs()[0]) +
               ",rhs=" + elem(op.getDpsInputs()[1]) + ",out=" + elem(op.getDpsInits()[0]);
    });
    Builder b(exe.getContext());
    SmallVector<NamedAttribute> attrs;
    auto put = [&](const std::string& key, const std::string& value) {
      attrs.push_back(b.getNamedAttr("cost." + entry + "." + key, b.getStringAttr(value)));
    };
    auto putCost = [&](const std::string& key, const Cost& c, bool known) {
      put(key, known ? c.value() : "?");
      if (!c.isStatic() || !known) put(key + ".formula", known ? c.formula() : "unknown");
    };
    putCost("bytes_read", read, true);
    putCost("bytes_written", written, true);
    putCost("flops", flops, flopsKnown);
    put("ops", ops);
    if (!matmul.empty()) put("matmul", matmul);
    exe->setAttr(kCostsAttr, b.getDictionaryAttr(attrs));
  }
};

class AttachDispatchCosts : public impl::AttachDispatchCostsBase<AttachDispatchCosts> {
 public:
  void runOnOperation() override {
    for (auto exe : getOperation().getOps<ExecutableOp>()) {
      auto costs = exe->getAttrOfType<DictionaryAttr>(kCostsAttr);
      if (!costs) continue;
      NamedAttrList merged;
      if (auto attrs = exe->getAttrOfType<DictionaryAttr>(kExecutableAttrsAttr)) merged.append(attrs);
      for (NamedAttribute a : costs) merged.set(a.getName(), a.getValue());
      exe->setAttr(kExecutableAttrsAttr, merged.getDictionary(exe.getContext()));
      exe->removeAttr(kCostsAttr);
    }
  }
};

}  // namespace
}  // namespace hexir
