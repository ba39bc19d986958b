// ONNX broadcasting where a `?` extent meets a different one (Context::Elementwise, Expand,
// MatMul's batch dims):
// another `?` extent, or a static one other than 1 (`?` vs 4: the `?` may be 1 at run time).
// Which operand is 1 is known only at run time, so the host chooses. Equal extents (the usual
// case) take the generic every elementwise op gets, reading each operand with the output's
// positions; otherwise a generic over the output reads each operand with `tensor.extract` at
// position 0 along the dims that are 1 at run time. Both are in one `scf.if` on a host flag.
// MatMul decides its batch dims the same way but keeps one matmul generic: an operand whose
// batch extents may be 1 where the output's are not is itself (equal extents) or its copy
// broadcast along them (`scf.if`), and the generic reads both with plain maps.
//
// The choice costs fusion with the producers (the generic is inside a region), so the importer
// avoids it where it can prove extents equal: Builder's symbolic dims (SymbolicDims.h) give
// one SSA value to equal shape computations (a conv's `(h + 2 - 3) + 1` is `h`), and graph
// inputs sharing a `dim_param` share one value (Importer.cc). What is left are extents from
// unrelated sources (two graph inputs' own `?` dims, shapes read from tensors).
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

namespace {

// The operand's dim at output position i, or null where the operand has no such dim.
const Dim* DimAt(const Val& v, const Shape& out, size_t i) {
  int64_t off = static_cast<int64_t>(out.size()) - v.rank();
  return static_cast<int64_t>(i) < off ? nullptr : &v.shape[i - off];
}

std::string I1(Builder& b, const std::string& op, const std::string& x, const std::string& y,
               const std::string& type) {
  std::string n = b.Fresh();
  b.Line(n + " = arith." + op + " " + x + ", " + y + " : " + type);
  return n;
}

// The host check that extent `o` (of the operands `label` names) and extent `d` (of operand k)
// broadcast at output position i: equal, or either is 1 (ONNX's rule). `where` names the node.
void CheckBroadcasts(Builder& b, const std::string& where, const std::string& one, size_t i,
                     const std::string& label, const std::string& o, size_t k, const std::string& d) {
  std::string ok = I1(b, "cmpi eq,", o, d, "index");
  ok = I1(b, "ori", ok, I1(b, "cmpi eq,", o, one, "index"), "i1");
  ok = I1(b, "ori", ok, I1(b, "cmpi eq,", d, one, "index"), "i1");
  b.Line("hexir.check " + ok + ", \"" + where + "dimension " + std::to_string(i) + " of " + label +
         " is {} and of operand " + std::to_string(k) +
         " is {}: they do not broadcast (extents must be equal or 1)\"(" + o + ", " + d + ") : index, index");
}

// Operand k of a batched MatMul (`x`: batch dims, then its two matrix dims) with its batch
// dims replaced by the output's where they are decided at run time: x itself when its extents
// are the output's (no copy), else a copy reading position 0 along its dims that are 1.
Val BatchBroadcast(Builder& b, const Val& x, size_t k, const Context::RunTimeExtents& e) {
  const size_t batch = static_cast<size_t>(x.rank()) - 2, off = e.out.size() - batch;
  Val r = x;
  std::string same;  // i1: every batch extent of x is the output's
  for (size_t j = 0; j < batch; ++j) {
    if (e.eq[k][off + j].empty()) continue;
    same = b.AndI1(same, e.eq[k][off + j]);
    r.shape[j] = e.out[off + j];
  }
  if (same.empty()) return x;
  const int loops = static_cast<int>(x.rank());
  // x itself (a `?` extent now known to be the output's static one: cast) when they are.
  r.name = b.XOr(same, x, Builder::TensorType(r), [&] {
    return b.IndexGeneric(r.shape, x.et, [&](const std::vector<std::string>&) {
      std::vector<std::string> at = b.LoopIndices(loops);
      std::string zero = b.IndexConst(0);
      for (size_t j = 0; j < batch; ++j)
        if (!e.unit[k][off + j].empty()) at[j] = b.Select(e.unit[k][off + j], zero, at[j], "index");
      return b.Extract(x, at);
    });
  });
  return r;
}

}  // namespace

bool Context::MeetsAtRunTime(const std::vector<Val*>& ins, const Shape& out) {
  for (size_t i = 0; i < out.size(); ++i)
    for (const Val* v : ins) {
      const Dim* d = DimAt(*v, out, i);
      if (d && d->dynamic() && (!out[i].dynamic() || d->ssa != out[i].ssa)) return true;
    }
  return false;
}

Context::RunTimeExtents Context::DecideAtRunTime(const std::vector<Val*>& ins, const Shape& shape) {
  const std::string where = node ? Builder::CheckText(Error("").message()) : "";
  const std::string one = b.IndexConst(1);
  RunTimeExtents e;
  e.out = shape;
  Shape& out = e.out;
  e.eq.assign(ins.size(), std::vector<std::string>(out.size()));
  e.unit = e.eq;
  for (size_t i = 0; i < out.size(); ++i) {
    Dim o;
    if (!out[i].dynamic()) {
      // A static extent N meeting `?` ones (N is not 1 then): each `?` must be N or 1 at run time.
      bool meets = false;
      size_t fixed = ins.size();  // the first operand whose extent is N
      for (size_t k = 0; k < ins.size(); ++k) {
        const Dim* d = DimAt(*ins[k], out, i);
        if (d && d->dynamic()) meets = true;
        if (d && !d->dynamic() && fixed == ins.size()) fixed = k;
      }
      if (!meets) continue;
      o = out[i];
      const std::string n = b.DimValue(o);
      for (size_t k = 0; k < ins.size(); ++k) {
        const Dim* d = DimAt(*ins[k], out, i);
        if (d && d->dynamic()) CheckBroadcasts(b, where, one, i, "operand " + std::to_string(fixed), n, k, d->ssa);
      }
    } else {
      int first = -1, last = -1;  // the operands o is the broadcast of
      for (size_t k = 0; k < ins.size(); ++k) {
        const Dim* d = DimAt(*ins[k], out, i);
        if (!d || !d->dynamic()) continue;  // a static 1
        if (first < 0) {
          o = *d;
          first = last = static_cast<int>(k);
          continue;
        }
        if (d->ssa == o.ssa) continue;
        CheckBroadcasts(b, where, one, i,
                        first == last ? "operand " + std::to_string(first)
                                      : "operands " + std::to_string(first) + " to " + std::to_string(last),
                        o.ssa, k, d->ssa);
        o = b.SelectDim(b.Compare("eq", o, Dim::Static(1)), *d, o);
        last = static_cast<int>(k);
      }
      out[i] = o;
    }
    const std::string extent = b.DimValue(o);
    for (size_t k = 0; k < ins.size(); ++k) {
      const Dim* d = DimAt(*ins[k], out, i);
      if (!d || !d->dynamic() || d->ssa == extent) continue;
      e.eq[k][i] = I1(b, "cmpi eq,", d->ssa, extent, "index");
      e.unit[k][i] = I1(b, "cmpi eq,", d->ssa, one, "index");
    }
  }
  return e;
}

StatusOr<Val> Context::BroadcastAtRunTime(std::vector<Val*> ins, size_t data, const Shape& shape,
                                          const std::string& out_et, const BodyFn& body) {
  const RunTimeExtents e = DecideAtRunTime(ins, shape);
  const Shape& out = e.out;
  const std::vector<std::vector<std::string>>& unit = e.unit;
  std::string same;  // i1: no operand is broadcast at run time
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t k = 0; k < ins.size(); ++k)
      if (!e.eq[k][i].empty()) same = b.AndI1(same, e.eq[k][i]);
  std::vector<const Val*> reads;
  std::vector<std::string> maps;
  for (size_t k = 0; k < data; ++k) {
    Mat(*ins[k]);
    reads.push_back(ins[k]);
    maps.push_back(BroadcastMap(*ins[k], out));
  }
  const int loops = static_cast<int>(out.size());
  auto same_extents = [&] {
    return b.Generic(reads, maps, Builder::IdentityMap(loops), out, out_et, loops,
                     std::vector<std::string>(loops, "parallel"), "", body);
  };
  Val r;
  r.et = out_et;
  r.shape = out;
  if (same.empty()) {  // every meeting folded to one value
    r.name = same_extents();
    return r;
  }
  const std::string type = Builder::TensorType(out, out_et);
  r.name = b.Fresh();
  b.Line(r.name + " = scf.if " + same + " -> (" + type + ") {");
  b.EnterRegion();
  b.Line("  scf.yield " + same_extents() + " : " + type);
  b.Line("} else {");
  std::string broadcast = b.IndexGeneric(out, out_et, [&](const std::vector<std::string>& args) {
    std::vector<std::string> idx = b.LoopIndices(loops), operands;
    std::string zero = b.IndexConst(0);
    for (size_t k = 0; k < data; ++k) {
      std::vector<std::string> at;
      for (size_t i = 0; i < out.size(); ++i) {
        const Dim* d = DimAt(*ins[k], out, i);
        if (!d) continue;
        bool static_unit = !d->dynamic() && d->v == 1 && (out[i].dynamic() || out[i].v != 1);
        at.push_back(static_unit         ? zero
                     : unit[k][i].empty() ? idx[i]
                                          : b.Select(unit[k][i], zero, idx[i], "index"));
      }
      operands.push_back(b.Extract(*ins[k], at));
    }
    operands.push_back(args[0]);
    return body(operands);
  });
  b.Line("  scf.yield " + broadcast + " : " + type);
  b.ExitRegion();
  b.Line("}");
  return r;
}

Shape Context::BroadcastBatchAtRunTime(Val& a, Val& bm, const Shape& batch) {
  Val ab = a, bb = bm;  // the batch parts
  ab.shape.resize(a.rank() - 2);
  bb.shape.resize(bm.rank() - 2);
  const RunTimeExtents e = DecideAtRunTime({&ab, &bb}, batch);
  a = BatchBroadcast(b, a, 0, e);
  bm = BatchBroadcast(b, bm, 1, e);
  return e.out;
}

}  // namespace hexir::importers::onnx
