#include "compiler/importers/onnx/NNWindow.h"

#include <algorithm>

namespace hexir::importers::onnx {

StatusOr<Window> WindowGeometry(Context& c, const Val& x, const std::vector<int64_t>& kernel,
                                bool ceil_mode) {
  Builder& b = c.b;
  Window w;
  w.s = static_cast<int>(kernel.size());
  w.kernel = kernel;
  w.strides = c.AttrInts("strides");
  w.dilations = c.AttrInts("dilations");
  if (w.strides.empty()) w.strides.assign(w.s, 1);
  if (w.dilations.empty()) w.dilations.assign(w.s, 1);
  std::vector<int64_t> pads = c.AttrInts("pads");
  if (pads.empty()) pads.assign(2 * w.s, 0);
  if (static_cast<int>(w.strides.size()) != w.s || static_cast<int>(w.dilations.size()) != w.s ||
      static_cast<int>(pads.size()) != 2 * w.s || x.rank() != w.s + 2)
    return c.Error("strides/dilations/pads do not match " + std::to_string(w.s) + " spatial dims");
  for (int i = 0; i < w.s; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || kernel[i] < 1)
      return c.Error("strides, dilations and kernel sizes must be positive");
  std::string auto_pad = c.AttrS("auto_pad", "NOTSET");
  std::string empty_batch;  // i1: a run-time batch of 0 (computed once, where a check needs it)
  for (int i = 0; i < w.s; ++i) {
    Dim in = x.shape[2 + i];
    // An empty spatial extent has no window to place (onnxruntime refuses it: "Invalid input
    // shape. Only N can be zero"); with padding the windows would read only the pad value and
    // answer with made-up numbers. Checked here, or on the host where the extent or the batch
    // is decided at run time; an empty batch (no windows at all) is fine.
    const Dim& batch = x.shape[0];
    const bool nonempty = !in.dynamic() && in.v >= 1, no_batch = !batch.dynamic() && batch.v == 0;
    if (!nonempty && !no_batch) {
      const std::string what = "spatial dimension " + std::to_string(i) + " of the input (dim " +
                               std::to_string(2 + i) + ") is ";
      const std::string why = ": a window needs at least one input position";
      if (!in.dynamic() && !batch.dynamic()) return c.Error(what + std::to_string(in.v) + why);
      const std::string extent = b.DimValue(in);
      std::string ok = b.Fresh();
      b.Line(ok + " = arith.cmpi sge, " + extent + ", " + b.IndexConst(1) + " : index");
      if (batch.dynamic()) {
        if (empty_batch.empty()) {
          empty_batch = b.Fresh();
          b.Line(empty_batch + " = arith.cmpi eq, " + b.DimValue(batch) + ", " + b.IndexConst(0) + " : index");
        }
        const std::string either = b.Fresh();
        b.Line(either + " = arith.ori " + ok + ", " + empty_batch + " : i1");
        ok = either;
      }
      b.CheckIndex(ok, c.Error("").message() + what, extent, why);
    }
    int64_t span = (kernel[i] - 1) * w.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in.dynamic()) return c.Error("auto_pad SAME on a dynamic spatial dimension is not supported");
      int64_t o = (in.v + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[i] + span - in.v);
      int64_t small = total / 2, big = total - small;
      w.pad_begin.push_back(Dim::Static(auto_pad == "SAME_UPPER" ? small : big));
      w.pad_end.push_back(Dim::Static(auto_pad == "SAME_UPPER" ? big : small));
      w.out.push_back(Dim::Static(o));
      continue;
    }
    if (auto_pad == "VALID") pads[i] = pads[w.s + i] = 0;
    Dim padded = b.Add(in, Dim::Static(pads[i] + pads[w.s + i] - span));
    Dim o;
    if (ceil_mode) {
      o = b.Add(b.FloorDiv(b.Add(padded, Dim::Static(w.strides[i] - 1)), Dim::Static(w.strides[i])),
                Dim::Static(1));
      if (!o.dynamic() && !in.dynamic() && (o.v - 1) * w.strides[i] >= in.v + pads[i]) o.v -= 1;
    } else {
      o = b.Add(b.FloorDiv(padded, Dim::Static(w.strides[i])), Dim::Static(1));
    }
    w.pad_begin.push_back(Dim::Static(pads[i]));
    // Extra end padding so the last (ceil-mode) window stays inside the padded input.
    Dim need = b.Add(b.Mul(b.Sub(o, Dim::Static(1)), Dim::Static(w.strides[i])), Dim::Static(span));
    Dim have = b.Add(in, Dim::Static(pads[i] + pads[w.s + i]));
    // Also when a window is larger than the input: onnxruntime's truncating division then
    // yields one output that reads only the valid part (the padding value is neutral).
    Dim extra = b.Max(b.Sub(need, have), Dim::Static(0));
    w.pad_end.push_back(b.Add(Dim::Static(pads[w.s + i]), extra));
    w.out.push_back(o);
  }
  return w;
}

Val PadSpatial(Context& c, Val& x, const Window& w, double value) {
  std::vector<Dim> pb = {Dim::Static(0), Dim::Static(0)}, pe = pb;
  pb.insert(pb.end(), w.pad_begin.begin(), w.pad_begin.end());
  pe.insert(pe.end(), w.pad_end.begin(), w.pad_end.end());
  return c.Pad(x, pb, pe, "constant", value);
}

}  // namespace hexir::importers::onnx
