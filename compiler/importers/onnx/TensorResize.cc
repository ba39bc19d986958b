// ONNX Resize (opsets 10-17) and Upsample (onnx/defs/tensor): nearest (every nearest_mode)
// and n-linear over the resized dims; an index generic computes each output position's source
// coordinate in f32 and reads the nearest / 2^k corner elements with tensor.extract.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// Whether dim i of x changes size or scale in `out`.
bool Resized(const Val& x, const Shape& out, const std::vector<double>& sc, int i) {
  return !(out[i].dynamic() || x.shape[i].dynamic() || (out[i].v == x.shape[i].v && sc[i] == 1.0));
}

// Scales (or output sizes when `sizes` is not empty) per dim of x.
Status ResizeWith(Context& c, Val& x, std::string mode, const std::string& ctm,
                  const std::string& nearest, const std::vector<double>& scales,
                  const std::vector<int64_t>& sizes) {
  Builder& b = c.b;
  int64_t rank = x.rank();
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") return c.Error("mode '" + mode + "' is not supported");
  if (ctm == "tf_crop_and_resize") return c.Error("coordinate_transformation_mode tf_crop_and_resize is not supported");
  if (c.HasAttr("axes")) return c.Error("the axes attribute is not supported");
  if (scales.empty() && sizes.empty()) return c.Error("needs scales or sizes");
  if (!sizes.empty() ? static_cast<int64_t>(sizes.size()) != rank
                     : static_cast<int64_t>(scales.size()) != rank)
    return c.Error("scales / sizes must have one entry per dim");
  Shape out;
  std::vector<double> sc(rank, 1.0);
  for (int64_t i = 0; i < rank; ++i) {
    const Dim& d = x.shape[i];
    bool same = sizes.empty() ? scales[i] == 1.0 : (!d.dynamic() && sizes[i] == d.v);
    if (same) {
      out.push_back(d);
      continue;
    }
    if (d.dynamic()) return c.Error("resizing a dynamic dimension is not supported");
    if (!sizes.empty()) {
      out.push_back(Dim::Static(sizes[i]));
      sc[i] = static_cast<double>(sizes[i]) / d.v;
    } else {
      out.push_back(Dim::Static(static_cast<int64_t>(std::floor(d.v * scales[i]))));
      sc[i] = scales[i];
    }
  }
  c.Mat(x);
  std::string et = x.et;
  if (mode == "linear" && !x.IsFloat()) return c.Error("linear mode on integers is not supported");
  int loops = static_cast<int>(rank);
  static const char* const kTransforms[] = {"align_corners", "asymmetric", "half_pixel",
                                            "pytorch_half_pixel", "tf_half_pixel_for_nn"};
  bool known_transform = std::find(std::begin(kTransforms), std::end(kTransforms), ctm) !=
                         std::end(kTransforms);
  for (int i = 0; i < loops && !known_transform; ++i)
    if (Resized(x, out, sc, i))
      return c.Error("coordinate_transformation_mode '" + ctm + "' is not supported");
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.IndexGeneric(out, et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(loops);
    // Per resized dim: source coordinate (f32), then nearest index or (i0, i1, weight).
    std::vector<std::string> i0(idx), i1(idx), wgt(loops);
    for (int i = 0; i < loops; ++i) {
      if (!Resized(x, out, sc, i)) continue;
      int64_t in = x.shape[i].v;
      double on = sizes.empty() ? in * sc[i] : static_cast<double>(out[i].v);  // the spec's length_resized
      std::string xi = b.Fresh(), xf = b.Fresh();
      b.Line(xi + " = arith.index_cast " + idx[i] + " : index to i64");
      b.Line(xf + " = arith.sitofp " + xi + " : i64 to f32");
      std::string s = b.ScalarConst("f32", sc[i]), half = b.ScalarConst("f32", 0.5), src;
      if (ctm == "asymmetric") {
        src = b.Bin("arith.divf", "", xf, s, "f32");
      } else if (ctm == "align_corners") {
        src = on <= 1 ? b.ScalarConst("f32", 0)
                      : b.Bin("arith.mulf", "", xf, b.ScalarConst("f32", static_cast<double>(in - 1) / (on - 1)), "f32");
      } else if (ctm == "tf_half_pixel_for_nn") {
        src = b.Bin("arith.divf", "", b.Bin("arith.addf", "", xf, half, "f32"), s, "f32");
      } else {  // half_pixel, pytorch_half_pixel
        src = b.Bin("arith.subf", "", b.Bin("arith.divf", "", b.Bin("arith.addf", "", xf, half, "f32"), s, "f32"), half, "f32");
        if (ctm == "pytorch_half_pixel" && on <= 1) src = b.ScalarConst("f32", 0);
      }
      std::string lo = b.ScalarConst("f32", 0), hi = b.ScalarConst("f32", static_cast<double>(in - 1));
      auto to_index = [&](const std::string& f) {
        std::string cl = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", f, lo, "f32"), hi, "f32");
        std::string i64 = b.Fresh(), ix = b.Fresh();
        b.Line(i64 + " = arith.fptosi " + cl + " : f32 to i64");
        b.Line(ix + " = arith.index_cast " + i64 + " : i64 to index");
        return ix;
      };
      if (mode == "nearest") {
        std::string n;
        if (nearest == "floor") n = b.Op1("math.floor", src, "f32");
        else if (nearest == "ceil") n = b.Op1("math.ceil", src, "f32");
        else {  // round half toward floor / ceil
          std::string fl = b.Op1("math.floor", src, "f32");
          std::string fr = b.Bin("arith.subf", "", src, fl, "f32");
          std::string up = b.Cmp(nearest == "round_prefer_ceil" ? "oge" : "ogt", "", fr, half, "f32");
          n = b.Select(up, b.Bin("arith.addf", "", fl, b.ScalarConst("f32", 1), "f32"), fl, "f32");
        }
        i0[i] = to_index(n);
      } else {
        std::string cl = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", src, lo, "f32"), hi, "f32");
        std::string fl = b.Op1("math.floor", cl, "f32");
        wgt[i] = b.Bin("arith.subf", "", cl, fl, "f32");
        i0[i] = to_index(fl);
        i1[i] = to_index(b.Bin("arith.addf", "", fl, b.ScalarConst("f32", 1), "f32"));
      }
    }
    auto read = [&](const std::vector<std::string>& at) {
      std::string e = b.Fresh();
      b.Line(e + " = tensor.extract " + x.name + "[" + Builder::Join(at) + "] : " + Builder::TensorType(x));
      return b.Convert(e, et, et);
    };
    if (mode == "nearest") return read(i0);
    // Multilinear: fold the resized dims one at a time over 2^k corners.
    std::vector<int> dims;
    for (int i = 0; i < loops; ++i)
      if (!wgt[i].empty()) dims.push_back(i);
    std::vector<std::string> vals;
    for (int m = 0; m < (1 << dims.size()); ++m) {
      std::vector<std::string> at = i0;
      for (size_t j = 0; j < dims.size(); ++j)
        if (m >> j & 1) at[dims[j]] = i1[dims[j]];
      std::string v = read(at);
      vals.push_back(et == "f32" ? v : b.Convert(v, et, "f32"));
    }
    for (size_t j = 0; j < dims.size(); ++j) {
      std::vector<std::string> next;
      for (size_t m = 0; m < vals.size(); m += 2) {
        std::string w = wgt[dims[j]];
        std::string d = b.Bin("arith.subf", "", vals[m + 1], vals[m], "f32");
        next.push_back(b.Bin("arith.addf", "", vals[m], b.Bin("arith.mulf", "", d, w, "f32"), "f32"));
      }
      vals = next;
    }
    return et == "f32" ? vals[0] : b.Convert(vals[0], "f32", et);
  });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace

// Opset 10: scales (input 1), asymmetric / floor. From 11: roi, scales, sizes (inputs 1-3).
Status LowerResize(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  bool v10 = c.opset < 11;
  std::string mode = c.AttrS("mode", "nearest");
  std::string ctm = c.AttrS("coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel");
  std::string nearest = c.AttrS("nearest_mode", v10 ? "floor" : "round_prefer_floor");
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (v10) {
    HEXIR_ASSIGN_OR_RETURN(Val& scales_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(scales, c.ConstFloats(scales_in, "scales"));
  } else {
    if (c.HasIn(2)) {
      HEXIR_ASSIGN_OR_RETURN(Val& scales_in, c.In(2));
      if (!scales_in.shape.empty() && scales_in.shape[0].v != 0) {
        HEXIR_ASSIGN_OR_RETURN(scales, c.ConstFloats(scales_in, "scales"));
      }
    }
    if (c.HasIn(3)) {
      HEXIR_ASSIGN_OR_RETURN(Val& sizes_in, c.In(3));
      HEXIR_ASSIGN_OR_RETURN(sizes, c.ConstInts(sizes_in, "sizes"));
    }
  }
  return ResizeWith(c, x, mode, ctm, nearest, scales, sizes);
}

// Scales: the attribute before opset 9, input 1 from 9 on; asymmetric / floor.
Status LowerUpsample(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string mode = c.AttrS("mode", "nearest");
  std::string ctm = c.AttrS("coordinate_transformation_mode", "asymmetric");
  std::string nearest = c.AttrS("nearest_mode", "floor");
  std::vector<double> scales;
  if (c.opset >= 9) {
    HEXIR_ASSIGN_OR_RETURN(Val& scales_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(scales, c.ConstFloats(scales_in, "scales"));
  }
  if (scales.empty())
    for (float f : c.AttrFloats("scales")) scales.push_back(f);
  return ResizeWith(c, x, mode, ctm, nearest, scales, {});
}

}  // namespace hexir::importers::onnx
