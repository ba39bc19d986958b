// ONNX AffineGrid (opset 20) and GridSample (opset 16, onnx/defs/tensor; 4-D input): each output position (n, c, y, x)
// reads grid[n, y, x] = (gx, gy) in [-1, 1], denormalizes it to input coordinates
// (align_corners: (g + 1) / 2 * (L - 1), else ((g + 1) L - 1) / 2), moves an out-of-range
// coordinate inside (border: clamp to [0, L - 1]; reflection: reflect at the border), then
// samples: nearest (round half to even), bilinear (2 x 2 taps) or bicubic (4 x 4 taps,
// A = -0.75). A tap outside the input reads 0 (zeros), the clamped index (border) or the
// reflected index (reflection), as onnxruntime does.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {

// Opset 20: the sampling grid of affine matrices theta ([N, 2, 3] or [N, 3, 4]) over an
// output of `size` ([N, C, H, W] or [N, C, D, H, W], constant): element (n, ..., k) is
// theta[n][k] . (x, y[, z], 1) with each coordinate spread over [-1, 1] (align_corners: the
// first and last pixels' centres at -1 and 1; else their outer edges, 2 i / L + 1 / L - 1).
Status LowerAffineGrid(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& theta, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& size_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> size, c.ConstInts(size_in, "size"));
  if (size.size() != 4 && size.size() != 5) return c.Error("size must have 4 or 5 entries");
  const int spatial = static_cast<int>(size.size()) - 2;
  if (!theta.IsFloat() || theta.rank() != 3 || theta.shape[1].dynamic() || theta.shape[1].v != spatial ||
      theta.shape[2].dynamic() || theta.shape[2].v != spatial + 1)
    return c.Error("theta must be N x " + std::to_string(spatial) + " x " + std::to_string(spatial + 1));
  bool align = c.AttrI("align_corners", 0) != 0;
  c.Mat(theta);
  std::string et = theta.et;
  Shape out = {theta.shape[0]};
  for (int i = 0; i < spatial; ++i) out.push_back(Dim::Static(size[2 + i]));
  out.push_back(Dim::Static(spatial));
  Val r = b.Tabulate(out, et, [&](std::vector<std::string> idx) {
    auto k = [&](double v) { return b.ScalarConst(et, v); };
    // Coordinates in theta's column order: x (the last spatial dim), y, z.
    std::vector<std::string> coords;
    for (int j = spatial - 1; j >= 0; --j) {
      double extent = static_cast<double>(size[2 + j]);
      std::string i = b.Convert(b.ToI64(idx[1 + j]), "i64", et);
      std::string v;
      if (align) {
        v = extent <= 1 ? k(-1) : b.Bin("arith.subf", "", b.Bin("arith.mulf", "", i, k(2 / (extent - 1)), et), k(1), et);
      } else {
        v = b.Bin("arith.subf", "", b.Bin("arith.mulf", "", b.Bin("arith.addf", "", i, k(0.5), et), k(2 / extent), et),
                  k(1), et);
      }
      coords.push_back(v);
    }
    std::string row = idx[1 + spatial];
    std::string acc = b.Extract(theta, {idx[0], row, b.IndexConst(spatial)});
    for (int j = 0; j < spatial; ++j)
      acc = b.Bin("arith.addf", "", acc,
                  b.Bin("arith.mulf", "", b.Extract(theta, {idx[0], row, b.IndexConst(j)}), coords[j], et), et);
    return acc;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

Status LowerGridSample(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& grid, c.In(1));
  if (x.rank() != 4 || grid.rank() != 4) return c.Error("only 4-D input and grid are supported");
  if (x.et != "f32" || grid.et != "f32") return c.Error("element type " + x.et + " is not supported");
  std::string mode = c.AttrS("mode", "bilinear"), padding = c.AttrS("padding_mode", "zeros");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return c.Error("mode '" + mode + "' is not supported");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return c.Error("padding_mode '" + padding + "' is not supported");
  bool align = c.AttrI("align_corners", 0) != 0;
  c.Mat(x);
  c.Mat(grid);
  Shape out = {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]};
  std::string height = b.DimAsFloat(x.shape[2], "f32"), width = b.DimAsFloat(x.shape[3], "f32");
  Val r = b.Tabulate(out, "f32", [&](std::vector<std::string> idx) {
    auto k = [&](double v) { return b.ScalarConst("f32", v); };
    auto bin = [&](const char* op, const std::string& l, const std::string& rr) { return b.Bin(op, "", l, rr, "f32"); };
    auto read_grid = [&](int comp) {
      std::string e = b.Fresh();
      b.Line(e + " = tensor.extract " + grid.name + "[" + idx[0] + ", " + idx[2] + ", " + idx[3] + ", " +
             b.IndexConst(comp) + "] : " + Builder::TensorType(grid));
      return e;
    };
    auto denormalize = [&](const std::string& g, const std::string& len) {
      std::string g1 = bin("arith.addf", g, k(1));
      if (align) return bin("arith.mulf", bin("arith.divf", g1, k(2)), bin("arith.subf", len, k(1)));
      return bin("arith.divf", bin("arith.subf", bin("arith.mulf", g1, len), k(1)), k(2));
    };
    // reflect v into [lo, hi]: fold the distance past the border by the range's parity.
    auto reflect = [&](const std::string& v, const std::string& lo, const std::string& hi_f) {
      std::string range = bin("arith.subf", hi_f, lo);
      auto fold = [&](const std::string& dist, const std::string& near, const std::string& far, bool from_lo) {
        std::string n = b.Op1("math.floor", bin("arith.divf", dist, range), "f32");
        std::string rem = bin("arith.subf", dist, bin("arith.mulf", n, range));
        std::string half = b.Op1("math.floor", bin("arith.divf", n, k(2)), "f32");
        std::string even = b.Cmp("oeq", "", bin("arith.mulf", half, k(2)), n, "f32");
        std::string a = from_lo ? bin("arith.addf", near, rem) : bin("arith.subf", near, rem);
        std::string z = from_lo ? bin("arith.subf", far, rem) : bin("arith.addf", far, rem);
        return b.Select(even, a, z, "f32");
      };
      std::string below = b.Cmp("olt", "", v, lo, "f32"), above = b.Cmp("ogt", "", v, hi_f, "f32");
      std::string low = fold(bin("arith.subf", lo, v), lo, hi_f, true);
      std::string high = fold(bin("arith.subf", v, hi_f), hi_f, lo, false);
      return b.Select(below, low, b.Select(above, high, v, "f32"), "f32");
    };
    std::string lo = align ? k(0) : k(-0.5);
    std::string x_hi = align ? bin("arith.subf", width, k(1)) : bin("arith.subf", width, k(0.5));
    std::string y_hi = align ? bin("arith.subf", height, k(1)) : bin("arith.subf", height, k(0.5));
    std::string gx = denormalize(read_grid(0), width), gy = denormalize(read_grid(1), height);
    if (mode == "nearest") {
      gx = b.Op1("math.roundeven", gx, "f32");
      gy = b.Op1("math.roundeven", gy, "f32");
    }
    if (padding == "border") {
      gx = Clamp(b, gx, k(0), bin("arith.subf", width, k(1)), "f32");
      gy = Clamp(b, gy, k(0), bin("arith.subf", height, k(1)), "f32");
    } else if (padding == "reflection") {
      gx = reflect(gx, lo, x_hi);
      gy = reflect(gy, lo, y_hi);
    }
    // The pixel at integer-valued f32 coordinates (row, col) under the padding mode.
    auto pixel = [&](const std::string& row, const std::string& col) {
      std::string rr = row, cc = col, inside;
      if (padding == "zeros") {
        inside = b.AndI1(b.AndI1(b.Cmp("oge", "", rr, k(0), "f32"), b.Cmp("ole", "", rr, bin("arith.subf", height, k(1)), "f32")),
                         b.AndI1(b.Cmp("oge", "", cc, k(0), "f32"), b.Cmp("ole", "", cc, bin("arith.subf", width, k(1)), "f32")));
      } else if (padding == "reflection") {
        rr = reflect(rr, lo, y_hi);
        cc = reflect(cc, lo, x_hi);
      }
      auto to_index = [&](const std::string& v, const std::string& len) {
        std::string cl = Clamp(b, v, k(0), bin("arith.subf", len, k(1)), "f32");
        std::string i = b.Fresh(), ix = b.Fresh();
        b.Line(i + " = arith.fptosi " + cl + " : f32 to i64");
        b.Line(ix + " = arith.index_cast " + i + " : i64 to index");
        return ix;
      };
      std::string e = b.Fresh();
      b.Line(e + " = tensor.extract " + x.name + "[" + idx[0] + ", " + idx[1] + ", " + to_index(rr, height) + ", " +
             to_index(cc, width) + "] : " + Builder::TensorType(x));
      return inside.empty() ? e : b.Select(inside, e, k(0), "f32");
    };
    if (mode == "nearest") return pixel(gy, gx);
    std::string fx = b.Op1("math.floor", gx, "f32"), fy = b.Op1("math.floor", gy, "f32");
    std::string tx = bin("arith.subf", gx, fx), ty = bin("arith.subf", gy, fy);
    std::vector<int> offsets = mode == "bilinear" ? std::vector<int>{0, 1} : std::vector<int>{-1, 0, 1, 2};
    auto weights = [&](const std::string& t) {
      std::vector<std::string> w;
      if (mode == "bilinear") return std::vector<std::string>{bin("arith.subf", k(1), t), t};
      for (int o : offsets) w.push_back(CubicWeight(b, -0.75, b.Op1("math.absf", bin("arith.subf", t, k(o)), "f32")));
      return w;
    };
    std::vector<std::string> wx = weights(tx), wy = weights(ty);
    std::string acc;
    for (size_t i = 0; i < offsets.size(); ++i) {
      std::string row_acc;
      std::string row = bin("arith.addf", fy, k(offsets[i]));
      for (size_t j = 0; j < offsets.size(); ++j) {
        std::string term = bin("arith.mulf", wx[j], pixel(row, bin("arith.addf", fx, k(offsets[j]))));
        row_acc = row_acc.empty() ? term : bin("arith.addf", row_acc, term);
      }
      std::string t = bin("arith.mulf", wy[i], row_acc);
      acc = acc.empty() ? t : bin("arith.addf", acc, t);
    }
    return acc;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
