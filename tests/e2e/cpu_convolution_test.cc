// The CPU convolution kernels (passes/codegen/CPUConvolutionKernel.h: dense convolutions as
// implicit GEMMs on the packed micro-kernel, with a constant filter on the filter packed once
// at load; CPUConvolutionDepthwise.h: depthwise ones on staged planes) against
// double-precision loops, in the ONNX importer's form (a linalg.generic over a pre-padded
// NCHW input), at awkward sizes: odd channel counts, 1x1, 3x3 and 7x7 windows, stride 2,
// dilation 2, rows that are no multiple of the vector width, grouped convolutions (which keep
// the loop lowering), batch 2, dynamic batch and spatial dims, explicit pads, a bias + ReLU
// epilogue, a bias + SiLU (fused into the convolution's dispatch), filters of few taps on
// output planes of 1 to 4 positions, the importer's zero pads (static, and of run-time
// extents as in a dynamic export) read by the depthwise kernel from the unpadded input; on
// 0, 1 and 2 worker threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

const char* kThreadCounts[] = {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=2"};

struct Conv {
  int64_t n, c, h, w;   // input (already padded)
  int64_t f, kh, kw;    // filters and window
  int64_t stride, dilation, group;
  bool dynamic = false;  // n, h, w dynamic
  bool epilogue = false;  // + bias[f], then max(., 0)
  bool silu = false;  // the importer's Conv + SiLU: bias[f] as the init, then v * sigmoid(v)
  // The importer's Conv with a bias: bias[f] as the init (a broadcast generic before the
  // convolution), then, with `relu`, Relu as a generic of maximumf(v, 0) into another tensor.
  bool bias = false, relu = false;
  bool constant = false;  // w a module constant (packed once at load), not an argument
  int64_t pad = 0;  // x is given unpadded (h - 2 pad by w - 2 pad) and padded by a tensor.pad
  // With `importerPad`, padded instead by the ONNX importer's zero pad (a generic reading x at
  // clamped coordinates, which joins a depthwise convolution's dispatch) of pads {top, left,
  // bottom, right} (`pad` unused).
  bool importerPad = false;
  std::array<int64_t, 4> pads{};
  int64_t top() const { return importerPad ? pads[0] : pad; }
  int64_t left() const { return importerPad ? pads[1] : pad; }
  int64_t h0() const { return h - (importerPad ? pads[0] + pads[2] : 2 * pad); }  // x's given extents
  int64_t w0() const { return w - (importerPad ? pads[1] + pads[3] : 2 * pad); }
  bool padded() const { return pad || importerPad; }
  int64_t oh() const { return (h - dilation * (kh - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w - dilation * (kw - 1) - 1) / stride + 1; }
  int64_t cg() const { return c / group; }
};

std::string Dim(int64_t d, bool dynamic) { return dynamic ? "?" : std::to_string(d); }

// `w` as an MLIR dense literal of its f32 bytes, exact.
std::string HexLiteral(const HostTensor& w, int64_t count) {
  static const char* digits = "0123456789ABCDEF";
  std::string hex = "\"0x";
  const auto* bytes = reinterpret_cast<const unsigned char*>(F32(w));
  for (int64_t i = 0; i < count * 4; ++i) {
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 15];
  }
  return hex + "\"";
}

std::string Source(const Conv& k, const HostTensor& weights) {
  bool d = k.dynamic;
  std::string x = "tensor<" + Dim(k.n, d) + "x" + std::to_string(k.c) + "x" + Dim(k.h, d) + "x" +
                  Dim(k.w, d) + "xf32>";
  std::string wt = "tensor<" + std::to_string(k.f) + "x" + std::to_string(k.cg()) + "x" +
                   std::to_string(k.kh) + "x" + std::to_string(k.kw) + "xf32>";
  std::string o = "tensor<" + Dim(k.n, d) + "x" + std::to_string(k.f) + "x" + Dim(k.oh(), d) +
                  "x" + Dim(k.ow(), d) + "xf32>";
  int64_t fg = k.f / k.group;
  std::string chan = k.group == 1 ? "d4"
                     : fg == 1    ? "d1 * " + std::to_string(k.cg()) + " + d4"
                                  : "(d1 floordiv " + std::to_string(fg) + ") * " +
                                     std::to_string(k.cg()) + " + d4";
  std::string s = std::to_string(k.stride), dl = std::to_string(k.dilation);
  std::string x0 = "tensor<" + Dim(k.n, d) + "x" + std::to_string(k.c) + "x" +
                   Dim(k.h0(), d) + "x" + Dim(k.w0(), d) + "xf32>";
  std::string src = "func.func @main(%" + std::string(k.padded() ? "x0: " + x0 : "x: " + x) +
                    (k.constant ? "" : ", %w: " + wt) + ", %bias: tensor<" + std::to_string(k.f) +
                    "xf32>) -> " + o + " {\n  %z = arith.constant 0.0 : f32\n";
  if (k.pad) {
    std::string p = std::to_string(k.pad);
    src += "  %x = tensor.pad %x0 low[0, 0, " + p + ", " + p + "] high[0, 0, " + p + ", " + p +
           "] {\n  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n    tensor.yield %z : f32\n"
           "  } : " + x0 + " to " + x + "\n";
  }
  if (k.importerPad) {
    // compiler/importers/onnx Context::Pad's form: x0 at min(max(i - low, 0), extent - 1),
    // the padding value outside x0.
    // With dynamic dims (a dynamic export's pad), x0's extents are tensor.dims and the padded
    // extents are sums of them.
    auto c = [](int64_t v) { return "arith.constant " + std::to_string(v) + " : index"; };
    src += "  %pc0 = " + c(0) + "\n  %pt = " + c(k.top()) + "\n  %pl = " + c(k.left()) + "\n";
    if (d) {
      src += "  %pc1 = " + c(1) + "\n  %pc2 = " + c(2) + "\n  %pc3 = " + c(3) + "\n  %pv = " +
             c(k.pads[0] + k.pads[2]) + "\n  %pu = " + c(k.pads[1] + k.pads[3]) +
             "\n  %pn = tensor.dim %x0, %pc0 : " + x0 + "\n  %ph = tensor.dim %x0, %pc2 : " + x0 +
             "\n  %pw = tensor.dim %x0, %pc3 : " + x0 + "\n  %ph1 = arith.subi %ph, %pc1 : index\n"
             "  %pw1 = arith.subi %pw, %pc1 : index\n  %phe = arith.addi %ph, %pv : index\n"
             "  %pwe = arith.addi %pw, %pu : index\n  %pe = tensor.empty(%pn, %phe, %pwe) : " + x + "\n";
    } else {
      src += "  %ph = " + c(k.h0()) + "\n  %pw = " + c(k.w0()) + "\n  %ph1 = " + c(k.h0() - 1) +
             "\n  %pw1 = " + c(k.w0() - 1) + "\n  %pe = tensor.empty() : " + x + "\n";
    }
    src += ""
           "  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], "
           "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\"]} outs(%pe : " + x + ") {\n"
           "  ^bb0(%po: f32):\n"
           "    %i0 = linalg.index 0 : index\n    %i1 = linalg.index 1 : index\n"
           "    %i2 = linalg.index 2 : index\n    %i3 = linalg.index 3 : index\n"
           "    %r = arith.subi %i2, %pt : index\n    %r1 = arith.maxsi %r, %pc0 : index\n"
           "    %r2 = arith.minsi %r1, %ph1 : index\n    %r3 = arith.cmpi sge, %r, %pc0 : index\n"
           "    %r4 = arith.cmpi slt, %r, %ph : index\n    %r5 = arith.andi %r3, %r4 : i1\n"
           "    %q = arith.subi %i3, %pl : index\n    %q1 = arith.maxsi %q, %pc0 : index\n"
           "    %q2 = arith.minsi %q1, %pw1 : index\n    %q3 = arith.cmpi sge, %q, %pc0 : index\n"
           "    %q4 = arith.cmpi slt, %q, %pw : index\n    %q5 = arith.andi %q3, %q4 : i1\n"
           "    %in = arith.andi %r5, %q5 : i1\n"
           "    %v = tensor.extract %x0[%i0, %i1, %r2, %q2] : " + x0 + "\n"
           "    %pz = arith.constant 0.0 : f32\n    %s = arith.select %in, %v, %pz : f32\n"
           "    linalg.yield %s : f32\n  } -> " + x + "\n";
  }
  if (k.constant)
    src += "  %w = arith.constant dense<" + HexLiteral(weights, k.f * k.cg() * k.kh * k.kw) +
           "> : " + wt + "\n";
  std::string sizes;
  if (d) {
    // oh = (h - dilation * (kh - 1) - 1) / stride + 1, likewise ow.
    src += "  %c0 = arith.constant 0 : index\n  %c2 = arith.constant 2 : index\n"
           "  %c3 = arith.constant 3 : index\n  %one = arith.constant 1 : index\n"
           "  %s = arith.constant " + s + " : index\n"
           "  %eh = arith.constant " + std::to_string(k.dilation * (k.kh - 1) + 1) + " : index\n"
           "  %ew = arith.constant " + std::to_string(k.dilation * (k.kw - 1) + 1) + " : index\n"
           "  %n = tensor.dim %x, %c0 : " + x + "\n"
           "  %h = tensor.dim %x, %c2 : " + x + "\n  %w2 = tensor.dim %x, %c3 : " + x + "\n"
           "  %h1 = arith.subi %h, %eh : index\n  %h2 = arith.divui %h1, %s : index\n"
           "  %oh = arith.addi %h2, %one : index\n"
           "  %w3 = arith.subi %w2, %ew : index\n  %w4 = arith.divui %w3, %s : index\n"
           "  %ow = arith.addi %w4, %one : index\n";
    sizes = "%n, %oh, %ow";
  }
  src += "  %e = tensor.empty(" + sizes + ") : " + o + "\n";
  if (k.silu || k.bias)
    src += "  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, "
           "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = [\"parallel\", "
           "\"parallel\", \"parallel\", \"parallel\"]} ins(%bias : tensor<" + std::to_string(k.f) +
           "xf32>) outs(%e : " + o + ") {\n  ^bb0(%b: f32, %o: f32):\n    linalg.yield %b : f32\n  } -> " +
           o + "\n";
  else
    src += "  %f = linalg.fill ins(%z : f32) outs(%e : " + o + ") -> " + o + "\n";
  src += "  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, " +
         chan + ", d2 * " + s + " + d5 * " + dl + ", d3 * " + s + " + d6 * " + dl +
         ")>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, "
         "affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = "
         "[\"parallel\", \"parallel\", \"parallel\", \"parallel\", \"reduction\", \"reduction\", "
         "\"reduction\"]} ins(%x, %w : " + x + ", " + wt + ") outs(%f : " + o + ") {\n"
         "  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
         "    %p = arith.mulf %a, %b : f32\n    %q = arith.addf %acc, %p : f32\n"
         "    linalg.yield %q : f32\n  } -> " + o + "\n";
  const std::string same = "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>";
  const std::string parallel4 = "[\"parallel\", \"parallel\", \"parallel\", \"parallel\"]";
  if (k.silu)
    return src + "  %g = linalg.generic {indexing_maps = [" + same + ", " + same + "], iterator_types = " +
           parallel4 + "} ins(%y : " + o + ") outs(%e : " + o + ") {\n"
           "  ^bb0(%v: f32, %o: f32):\n    %sg1 = arith.constant 1.0 : f32\n"
           "    %sg2 = arith.negf %v : f32\n    %sg3 = math.exp %sg2 : f32\n"
           "    %sg4 = arith.addf %sg1, %sg3 : f32\n    %sg5 = arith.divf %sg1, %sg4 : f32\n"
           "    linalg.yield %sg5 : f32\n  } -> " + o + "\n"
           "  %r = linalg.generic {indexing_maps = [" + same + ", " + same + ", " + same +
           "], iterator_types = " + parallel4 + "} ins(%y, %g : " + o + ", " + o + ") outs(%e : " + o +
           ") {\n  ^bb0(%v: f32, %sg: f32, %o: f32):\n    %m = arith.mulf %v, %sg : f32\n"
           "    linalg.yield %m : f32\n  } -> " + o + "\n  return %r : " + o + "\n}\n";
  if (k.relu)
    return src + "  %r = linalg.generic {indexing_maps = [" + same + ", " + same + "], iterator_types = " +
           parallel4 + "} ins(%y : " + o + ") outs(%e : " + o + ") {\n"
           "  ^bb0(%v: f32, %o: f32):\n    %m = arith.maximumf %v, %z : f32\n    linalg.yield %m : f32\n"
           "  } -> " + o + "\n  return %r : " + o + "\n}\n";
  if (!k.epilogue) return src + "  return %y : " + o + "\n}\n";
  src += "  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, "
         "affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], "
         "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\"]} ins(%y, %bias : " +
         o + ", tensor<" + std::to_string(k.f) + "xf32>) outs(%e : " + o + ") {\n"
         "  ^bb0(%v: f32, %b: f32, %o: f32):\n"
         "    %t = arith.addf %v, %b : f32\n    %m = arith.maximumf %t, %z : f32\n"
         "    linalg.yield %m : f32\n  } -> " + o + "\n";
  return src + "  return %r : " + o + "\n}\n";
}

HostTensor Reference(const Conv& k, const HostTensor& x, const HostTensor& w, const HostTensor& bias) {
  int64_t oh = k.oh(), ow = k.ow(), cg = k.cg(), fg = k.f / k.group;
  HostTensor out = ZerosF32({k.n, k.f, oh, ow});
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t f = 0; f < k.f; ++f)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t a = 0; a < k.kh; ++a)
              for (int64_t b = 0; b < k.kw; ++b) {
                int64_t ci = (f / fg) * cg + c;
                int64_t y = i * k.stride + a * k.dilation, z = j * k.stride + b * k.dilation;
                acc += double(F32(x)[((n * k.c + ci) * k.h + y) * k.w + z]) *
                       F32(w)[((f * cg + c) * k.kh + a) * k.kw + b];
              }
          if (k.epilogue) acc = std::max(acc + F32(bias)[f], 0.0);
          if (k.bias) acc += F32(bias)[f];
          if (k.relu) acc = std::max(acc, 0.0);
          if (k.silu) acc = (acc + F32(bias)[f]) / (1 + std::exp(-(acc + F32(bias)[f])));
          F32(out)[((n * k.f + f) * oh + i) * ow + j] = float(acc);
        }
  return out;
}

void Check(const Conv& k, std::initializer_list<const char*> threadCounts = {}) {
  INFO("x " << k.n << "x" << k.c << "x" << k.h << "x" << k.w << ", w " << k.f << "x" << k.cg()
            << "x" << k.kh << "x" << k.kw << ", stride " << k.stride << ", dilation "
            << k.dilation << ", group " << k.group << (k.dynamic ? " (dynamic)" : "")
            << (k.epilogue ? " + bias + relu" : "") << (k.silu ? " + bias + silu" : "")
            << (k.bias ? " + bias (init)" : "") << (k.relu ? " + relu (maximumf)" : "") << (k.constant ? " (constant filter)" : "")
            << ", pad " << k.pad << (k.importerPad ? " (the importer's, top/left " : "")
            << (k.importerPad ? std::to_string(k.top()) + "/" + std::to_string(k.left()) + ")" : ""));
  std::string name = "conv_" + std::to_string(k.n) + "x" + std::to_string(k.c) + "x" +
                     std::to_string(k.h) + "x" + std::to_string(k.w) + "_" + std::to_string(k.f) +
                     "x" + std::to_string(k.kh) + "x" + std::to_string(k.kw) + "_s" +
                     std::to_string(k.stride) + "d" + std::to_string(k.dilation) + "g" +
                     std::to_string(k.group) + (k.dynamic ? "_dyn" : "") + (k.epilogue ? "_relu" : "") +
                     (k.silu ? "_silu" : "") + (k.bias ? "_bias" : "") + (k.relu ? "_max" : "") +
                     (k.constant ? "_const" : "") + (k.pad ? "_p" + std::to_string(k.pad) : "") +
                     (k.importerPad ? "_ip" + std::to_string(k.pads[0]) + std::to_string(k.pads[1]) +
                                          std::to_string(k.pads[2]) + std::to_string(k.pads[3])
                                    : "");
  HostTensor x = RandomF32({k.n, k.c, k.h, k.w}, 11), w = RandomF32({k.f, k.cg(), k.kh, k.kw}, 12),
             bias = RandomF32({k.f}, 13);
  // With a pad, the module gets x's interior; its border is zero.
  HostTensor x0 = RandomF32({k.n, k.c, k.h0(), k.w0()}, 11);
  if (k.padded()) {
    int64_t h0 = k.h0(), w0 = k.w0();
    x = ZerosF32({k.n, k.c, k.h, k.w});
    for (int64_t p = 0; p < k.n * k.c; ++p)
      for (int64_t i = 0; i < h0; ++i)
        for (int64_t j = 0; j < w0; ++j)
          F32(x)[(p * k.h + i + k.top()) * k.w + j + k.left()] = F32(x0)[(p * h0 + i) * w0 + j];
  }
  std::string module = CompileOrDie(Source(k, w), name);
  HostTensor expected = Reference(k, x, w, bias);
  std::vector<const char*> threadList(threadCounts);
  if (threadList.empty()) threadList.assign(std::begin(kThreadCounts), std::end(kThreadCounts));
  for (const char* threads : threadList) {
    INFO(threads);
    const HostTensor& given = k.padded() ? x0 : x;
    std::vector<HostTensor> inputs{given, w, bias};
    if (k.constant) inputs = {given, bias};
    auto out = RunOrDie(module, "main", inputs, 1, "cpu", threads);
    RequireClose(out[0], expected, 1e-5, 1e-4);
  }
}

// One module of `k` with dynamic batch and spatial dims (k.n, k.h, k.w unused at compile
// time), run in this process at each (batch, output rows, output columns) of `sizes`.
void CheckOneModuleAtSizes(Conv k, std::initializer_list<std::array<int64_t, 3>> sizes) {
  k.dynamic = true;
  HostTensor w = RandomF32({k.f, k.cg(), k.kh, k.kw}, 12), bias = RandomF32({k.f}, 13);
  std::string module = CompileOrDie(Source(k, w), "conv_sizes_c" + std::to_string(k.c) + "f" +
                                                       std::to_string(k.f) + "s" + std::to_string(k.stride) +
                                                       (k.constant ? "_const" : ""));
  for (const auto& [n, oh, ow] : sizes) {
    k.n = n;
    k.h = (oh - 1) * k.stride + k.dilation * (k.kh - 1) + 1;
    k.w = (ow - 1) * k.stride + k.dilation * (k.kw - 1) + 1;
    INFO("x " << k.n << "x" << k.c << "x" << k.h << "x" << k.w << ", w " << k.f << "x" << k.cg() << "x"
              << k.kh << "x" << k.kw << ", stride " << k.stride << (k.constant ? " (constant filter)" : ""));
    HostTensor x = RandomF32({k.n, k.c, k.h, k.w}, 11 + n + oh);
    HostTensor expected = Reference(k, x, w, bias);
    for (const char* threads : {"--cpu-threads=0", "--cpu-threads=2"}) {
      INFO(threads);
      std::vector<HostTensor> inputs{x, w, bias};
      if (k.constant) inputs = {x, bias};
      auto out = RunOrDie(module, "main", inputs, 1, "cpu", threads);
      RequireClose(out[0], expected, 1e-5, 1e-4);
    }
  }
}

TEST_CASE("one dynamic-size convolution module runs at several batch and spatial sizes, each matching a double reference") {
  // 48 filters: split over workgroups along the channels, as many as the run-time work pays
  // for (output planes of 1 and 57 x 57 differ by 3249x). On a filter argument (the
  // input-packing kernel) and a constant filter of 216 taps (packed once at load); bias + ReLU.
  Conv dense{1, 24, 0, 0, 48, 3, 3, 1, 1, 1};
  dense.epilogue = true;
  for (bool constant : {false, true}) {
    dense.constant = constant;
    CheckOneModuleAtSizes(dense, {{1, 1, 1}, {3, 7, 7}, {1, 13, 13}, {1, 57, 57}, {3, 13, 7}});
  }
  // Stride 2, 37 filters (a partial panel and a partial workgroup), batch 1 and 3.
  Conv strided{1, 22, 0, 0, 37, 3, 3, 2, 1, 1};
  strided.constant = true;
  CheckOneModuleAtSizes(strided, {{1, 1, 1}, {3, 7, 7}, {1, 13, 13}, {3, 57, 13}});
}

TEST_CASE("one dynamic-size 1x1 convolution module, its panels loaded whole, masked or gathered, matches a double reference") {
  // A 1x1 convolution over a whole plane reads consecutive columns: full panels are loaded,
  // partial ones (planes of fewer positions than a panel, every plane's last) loaded masked
  // (CPUConvolutionKernel.h). Planes of 1 to 57 x 57, batch 1 and 3; 40 filters over 24
  // channels (an argument filter) and over 13 (a constant one of 13 taps, packed besides at
  // load: on planes of at most 4 positions its packed kernel runs, chosen at run time, the
  // input-packing one on the original filter otherwise; bias + ReLU absorbed by both).
  // Planes of 2 x 2, 3 x 3, 4 x 4 and 7 x 7 take the kernel on a static view of the plane,
  // chosen at run time (CPUConvolutionKernel.cpp, kDensePlaneOutputs); 2 x 4, 4 x 2, 3 x 7 and
  // 7 x 3 do not.
  Conv pointwise{1, 24, 0, 0, 40, 1, 1, 1, 1, 1};
  pointwise.epilogue = true;
  CheckOneModuleAtSizes(pointwise, {{1, 1, 1}, {3, 3, 3}, {1, 3, 3}, {1, 7, 7}, {3, 7, 7}, {3, 13, 13}, {1, 57, 57},
                                    {3, 5, 7}, {1, 2, 2}, {3, 2, 2}, {1, 4, 4}, {3, 4, 4}, {1, 2, 4}, {3, 4, 2},
                                    {1, 3, 7}, {3, 7, 3}});
  Conv few{1, 13, 0, 0, 40, 1, 1, 1, 1, 1};
  few.constant = true;
  few.epilogue = true;
  CheckOneModuleAtSizes(few, {{1, 1, 1}, {3, 2, 2}, {1, 1, 4}, {1, 4, 4}, {1, 13, 13}, {3, 57, 3}});
}

TEST_CASE("dynamic-size convolutions on output planes of 1 to 4 positions and a few more match a double reference") {
  // Planes of fewer positions than a panel's columns (partial panels: loaded masked when
  // consecutive in x, gathered otherwise) in one module: 1 x 1, 1 x 3, 1 x 4, 2 x 1, 2 x 2
  // (batch 1 and 3), then 2 x 3 and 5 x 5. A 1x1 over 37 channels (K no multiple of the
  // lanes), a 3x3 at stride 2 over 7 (K = 63), a 3x3 at dilation 2 over 19 channels with a
  // constant filter of 171 taps (packed besides at load: its packed kernel on the planes of
  // at most 4 positions, the input-packing one on the others).
  Conv pointwise{1, 37, 0, 0, 23, 1, 1, 1, 1, 1};
  pointwise.epilogue = true;
  CheckOneModuleAtSizes(pointwise, {{1, 1, 1}, {1, 1, 3}, {3, 1, 4}, {1, 2, 1}, {3, 2, 2}, {1, 2, 3}, {1, 5, 5}});
  Conv strided{1, 7, 0, 0, 19, 3, 3, 2, 1, 1};
  CheckOneModuleAtSizes(strided, {{1, 1, 1}, {3, 1, 4}, {1, 2, 2}, {1, 2, 3}, {3, 5, 5}});
  Conv dilated{1, 19, 0, 0, 11, 3, 3, 1, 2, 1};
  dilated.constant = true;
  CheckOneModuleAtSizes(dilated, {{1, 1, 1}, {1, 2, 2}, {3, 1, 3}, {1, 4, 4}});
}

TEST_CASE("a dynamic-size convolution on a filter packed at load is exact around its 8-row register tiles") {
  // The packed-filter kernel's tiles are 8 output positions by NR filters, then the rows left
  // as tiles of 4, 2 and 1 (CPUConvolutionKernel.h, kPackedFilterMaxTileRows): positions
  // 1, 7, 8, 9, 15, 17 (prime), 2 x 2 .. 16 x 16 planes (ResNet's stages in small), batch 3 of
  // 5 x 13; 67 filters (prime: a partial panel) over 29 channels (K = 261); stride 1 and 2.
  Conv dense{1, 29, 0, 0, 67, 3, 3, 1, 1, 1};
  dense.constant = true;
  dense.epilogue = true;
  CheckOneModuleAtSizes(dense, {{1, 1, 1}, {1, 1, 7}, {1, 2, 4}, {1, 3, 3}, {1, 3, 5}, {1, 1, 17},
                                {1, 2, 2}, {1, 4, 4}, {1, 8, 8}, {1, 16, 16}, {3, 5, 13}});
  Conv strided{1, 29, 0, 0, 67, 3, 3, 2, 1, 1};
  strided.constant = true;
  CheckOneModuleAtSizes(strided, {{1, 1, 1}, {1, 3, 3}, {1, 1, 17}, {3, 5, 13}, {1, 8, 8}});
}

TEST_CASE("dense convolutions at awkward sizes match a double reference") {
  // 3x3 over odd channels and a row of 13; stride 2 with a 7x7 window (a ResNet stem);
  // dilation 2; 1x1 over a whole plane (a matmul) and with stride 2; more filters than a
  // register tile and channels past the packed panel's depth; batch 2.
  Check({1, 3, 15, 13, 5, 3, 3, 1, 1, 1});
  Check({1, 3, 23, 21, 9, 7, 7, 2, 1, 1});
  Check({1, 5, 17, 16, 7, 3, 3, 1, 2, 1});
  Check({1, 19, 9, 11, 13, 1, 1, 1, 1, 1});
  Check({1, 6, 9, 9, 10, 1, 1, 2, 1, 1});
  Check({2, 300, 6, 6, 37, 3, 3, 1, 1, 1});
  // Stride 2 leaving the last row and column of x unread: the kernel reads a window of the
  // plane through its row pitch.
  Check({1, 4, 16, 16, 8, 3, 3, 2, 1, 1});
  // 18 x 17 = 306 output positions: past one packed block of B (256 columns on AVX2) into a
  // partial panel of the second.
  Check({1, 4, 20, 19, 9, 3, 3, 1, 1, 1});
}

TEST_CASE("dense convolutions whose panels straddle output rows, loaded as two runs a vector, match a double reference") {
  // Rows of at least one vector of outputs and no multiple of NR: each panel vector's lanes
  // in two output rows, each a run of x (stride 2: every other element), merged. Stride 2
  // over 22 and 17 outputs a row; stride 1 with dilation 2 over 19; stride 1 over 16 (a
  // vector exactly on AVX-512) at batch 2; a window of a wider plane (x's last columns unread).
  Check({1, 3, 41, 45, 10, 3, 3, 2, 1, 1});
  Check({1, 2, 19, 35, 5, 3, 3, 2, 1, 1, false, true});
  Check({1, 5, 20, 23, 7, 3, 3, 1, 2, 1});
  Check({2, 4, 11, 18, 6, 3, 3, 1, 1, 1});
  Check({1, 3, 30, 40, 9, 5, 5, 2, 1, 1});
}

TEST_CASE("dense and grouped convolutions reading their tap offsets from a table match a double reference") {
  // The input-packing kernel's table of C x KH x KW tap offsets: a 5x5 window at stride 2
  // and dilation 2 over 7 channels at batch 2; grouped 3x3s (a table per group's GEMM, the
  // same offsets); 460 x 3 x 3 = 4140 taps, past the table (computed per step of k).
  Check({2, 7, 19, 23, 11, 5, 5, 2, 2, 1});
  Check({1, 12, 11, 10, 8, 3, 3, 1, 1, 4});
  Check({1, 6, 13, 15, 9, 3, 3, 2, 1, 3});
  Check({1, 460, 5, 5, 6, 3, 3, 1, 1, 1});
}

// Convolutions whose filter is a module constant of at least 192 taps (C * KH * KW): packed
// once at load into panels of NR filters (hexir-cpu-pack-matmul-operands), the output
// positions the GEMM's rows.
Conv Constant(Conv k) {
  k.constant = true;
  return k;
}

TEST_CASE("dense convolutions over planes of at least 512 outputs, split along their output rows, match a double reference") {
  // Workgroups of output rows (hexir-cpu-distribute-workgroups), the last one shorter (its
  // rows a run-time extent, its epilogue's outer loops too): a 3x3 / 2 stem over 3 channels
  // of 33 x 32 outputs with bias + ReLU, a 7x7 / 2 one of 32 x 23, a 1x1 over 37 x 29 with
  // bias + ReLU, dilation 2 at batch 2, a constant filter of 27 taps (not packed at load).
  Check({1, 3, 67, 65, 20, 3, 3, 2, 1, 1, false, true});
  Check({1, 3, 69, 51, 9, 7, 7, 2, 1, 1});
  Check({1, 19, 37, 29, 21, 1, 1, 1, 1, 1, false, true});
  Check({2, 5, 29, 26, 7, 3, 3, 1, 2, 1});
  Check(Constant({1, 3, 67, 65, 20, 3, 3, 2, 1, 1, false, true}));
}

TEST_CASE("dense convolutions on a filter packed at load match a double reference") {
  // 3x3 over 23 channels (K = 207), 5 filters (one partial panel), a row of 13; a 7x7
  // stride-2 stem over 4 channels (196); dilation 2; 1x1 over 193 channels on a plane and
  // with stride 2; 37 filters (past a panel of NR = 16 or 32) over 300 channels (K = 2700),
  // batch 2; stride 2 leaving x's last row and column unread (a window of its plane).
  Check(Constant({1, 23, 15, 13, 5, 3, 3, 1, 1, 1}));
  Check(Constant({1, 4, 23, 21, 9, 7, 7, 2, 1, 1}));
  Check(Constant({1, 22, 17, 16, 7, 3, 3, 1, 2, 1}));
  Check(Constant({1, 193, 9, 11, 13, 1, 1, 1, 1, 1}));
  Check(Constant({1, 200, 9, 9, 10, 1, 1, 2, 1, 1}));
  Check(Constant({2, 300, 6, 6, 37, 3, 3, 1, 1, 1}));
  Check(Constant({1, 24, 16, 16, 8, 3, 3, 2, 1, 1}));
  // 64 filters over 2 x 2 positions (ResNet's last stage in small), in 2 workgroups; 96
  // filters in 3 workgroups (the 4 wanted, 24 filters each, rounded up to whole panels); 40
  // filters in workgroups of 32 and 8 (the last slice of the filter has a dynamic extent:
  // MobileNetV3's projections); 27 x 19 = 513 positions (rows past a row block).
  Check(Constant({1, 40, 4, 4, 64, 3, 3, 1, 1, 1}));
  Check(Constant({2, 256, 6, 6, 96, 1, 1, 1, 1, 1}));
  Check(Constant({1, 256, 6, 6, 40, 1, 1, 1, 1, 1}));
  Check(Constant({1, 23, 29, 21, 17, 3, 3, 1, 1, 1}));
  // Dynamic batch and spatial dims with a bias + ReLU epilogue; a dynamic strided window.
  Conv dense = Constant({2, 25, 12, 10, 11, 3, 3, 1, 1, 1});
  dense.dynamic = true;
  dense.epilogue = true;
  Check(dense);
  Conv strided = Constant({1, 24, 15, 14, 6, 3, 3, 2, 1, 1});
  strided.dynamic = true;
  Check(strided);
  Conv stem = Constant({1, 4, 37, 37, 16, 7, 7, 2, 1, 1});
  stem.epilogue = true;
  Check(stem);
}

TEST_CASE("dense convolutions on a filter packed at load add register tiles of 8, 4, 2 and 1 rows to out transposed and match a double reference") {
  // The tiles' positions consecutive in out, across output rows (OW 7, 5, 3), each filter's
  // rows one vector; partial panels of filters (37 = 32 + 5, 20, 45 = 32 + 13, 33) masked;
  // 5 x 7 = 35 positions (tiles of 8, 8, 8, 8, 2, 1), 4 x 4, 6 x 5 at stride 2 (8, 8, 8, 4,
  // 2), 3 x 3 at batch 2 (8, 1).
  Check(Constant({1, 16, 7, 9, 37, 3, 3, 1, 1, 1}));
  Check(Constant({1, 20, 6, 6, 20, 3, 3, 1, 1, 1}));
  Check(Constant({1, 17, 13, 11, 45, 3, 3, 2, 1, 1}));
  Check(Constant({2, 24, 5, 5, 33, 3, 3, 1, 1, 1, false, true}));
}

TEST_CASE("dense convolutions of windows wider than 1x1 over 16 to 191 channels on a filter packed at load match a double reference") {
  // Fewer than 192 taps, packed since the window is wider than 1x1 and over at least 16
  // channels: SqueezeNet's expand3x3 (3x3 over 16 channels, 64 filters on a padded 15 x 15
  // plane, bias + ReLU); 19 channels, 5 filters (a partial panel), stride 2; 5x5 over 17
  // channels, dilation 2; 3x3 over 16 channels with dynamic batch and spatial dims, batch 2.
  Conv expand = Constant({1, 16, 17, 17, 64, 3, 3, 1, 1, 1});
  expand.pad = 1;
  expand.epilogue = true;
  Check(expand);
  Check(Constant({1, 19, 13, 11, 5, 3, 3, 2, 1, 1}));
  Check(Constant({1, 17, 14, 15, 21, 5, 5, 1, 2, 1}));
  Conv dynamic = Constant({2, 16, 9, 11, 33, 3, 3, 1, 1, 1});
  dynamic.dynamic = true;
  Check(dynamic);
}

Conv Silu(Conv k) {
  k.silu = true;
  return k;
}

TEST_CASE("convolutions on output planes of 1 to 4 positions with a SiLU match a double reference") {
  // Constant filters of few taps on planes of at most 4 positions are packed too (tiny
  // planes: the input-packing kernel would fill 1-4 of its NR columns): squeeze-excitation's
  // FCs on a 1 x 1 plane (37 -> 53 filters, 5 -> 67: a partial panel), batch 2 of them, 300
  // taps on one position (a plane of one: out's filters loaded as vectors), 2 x 2 and 1 x 3
  // planes of 24 and 7 taps, a 3 x 3 stride-2 window onto a 2 x 2 plane; bias + SiLU (the
  // convolution's region takes the sigmoid and the multiply).
  Check(Silu(Constant({1, 37, 1, 1, 53, 1, 1, 1, 1, 1})));
  Check(Silu(Constant({1, 5, 1, 1, 67, 1, 1, 1, 1, 1})));
  Check(Silu(Constant({2, 37, 1, 1, 19, 1, 1, 1, 1, 1})));
  Check(Silu(Constant({1, 300, 1, 1, 45, 1, 1, 1, 1, 1})));
  Check(Silu(Constant({1, 24, 2, 2, 41, 1, 1, 1, 1, 1})));
  Check(Constant({1, 7, 1, 3, 33, 1, 1, 1, 1, 1}));
  Check(Silu(Constant({1, 3, 5, 5, 17, 3, 3, 2, 1, 1})));
  // The same on a filter argument (the input-packing kernel), a 3 x 3 plane (9 positions:
  // not tiny) and dynamic batch and spatial dims, each with the SiLU fused.
  Check(Silu({1, 37, 1, 1, 53, 1, 1, 1, 1, 1}));
  Check(Silu(Constant({1, 11, 3, 3, 29, 1, 1, 1, 1, 1})));
  Conv dynamic = Silu(Constant({2, 13, 5, 4, 21, 3, 3, 1, 1, 1}));
  dynamic.dynamic = true;
  Check(dynamic);
  // A depthwise convolution's SiLU joins its dispatch too (17 channels, stride 2).
  Check(Silu({1, 17, 9, 9, 17, 3, 3, 2, 1, 17}));
}

// The importer's Conv with a bias (then Relu): bias[f] broadcast into out before the
// convolution, maximumf(v, 0) into another tensor after it. The dense, grouped and
// packed-filter kernels start their register tiles at the bias and store the ReLU'd tile
// (CPUConvolutionEpilogue.h); 0, 1 and 3 workers.
Conv BiasRelu(Conv k, bool relu = true) {
  k.bias = true;
  k.relu = relu;
  return k;
}

TEST_CASE("convolutions with the importer's bias init and ReLU fused into their kernel match a double reference") {
  const auto threads = {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=3"};
  // The input-packing kernel: a 3x3 / 2 stem over 3 channels (SqueezeNet's, 33 x 32 outputs:
  // split along output rows into workgroups), 37 filters (prime: partial register tiles of
  // rows) over a 1x1 of 29 channels on a 13 x 11 plane, 7 filters over 61 channels of 3x3
  // (K = 549: three K blocks, the bias only in the first, the ReLU only in the last), 1x1
  // at stride 2, batch 2; a bias without ReLU.
  Check(BiasRelu({1, 3, 67, 65, 23, 3, 3, 2, 1, 1}), threads);
  Check(BiasRelu({1, 29, 13, 11, 37, 1, 1, 1, 1, 1}), threads);
  Check(BiasRelu({1, 61, 9, 7, 7, 3, 3, 1, 1, 1}), threads);
  Check(BiasRelu({2, 6, 9, 9, 13, 1, 1, 2, 1, 1}), threads);
  Check(BiasRelu({1, 19, 11, 13, 17, 3, 3, 1, 1, 1}, /*relu=*/false), threads);
  // Grouped (a bias slice per group): 4 groups of 3 filters, 3 groups of 5 at stride 2.
  Check(BiasRelu({1, 12, 11, 10, 12, 3, 3, 1, 1, 4}), threads);
  Check(BiasRelu({1, 9, 13, 15, 15, 3, 3, 2, 1, 3}), threads);
  // On a filter packed at load (the positions the rows, the filters the columns: the bias a
  // vector of filters, masked past F): SqueezeNet's expand3x3 (16 channels, 64 filters, 15 x
  // 15), 37 filters (32 + 5) over 5 x 7 positions (tiles of 8, 2 and 1 rows: transposed and
  // scattered), 1x1s over 193 channels on 3 x 3 and on one position (filters as vectors),
  // dilation 2, batch 2 with 67 filters over 29 channels; a bias without ReLU.
  Check(BiasRelu(Constant({1, 16, 17, 17, 64, 3, 3, 1, 1, 1})), threads);
  Check(BiasRelu(Constant({1, 16, 7, 9, 37, 3, 3, 1, 1, 1})), threads);
  Check(BiasRelu(Constant({1, 193, 3, 3, 13, 1, 1, 1, 1, 1})), threads);
  Check(BiasRelu(Constant({1, 193, 1, 1, 41, 1, 1, 1, 1, 1})), threads);
  Check(BiasRelu(Constant({1, 22, 17, 16, 7, 3, 3, 1, 2, 1})), threads);
  Check(BiasRelu(Constant({2, 29, 7, 9, 67, 3, 3, 1, 1, 1})), threads);
  Check(BiasRelu(Constant({1, 23, 15, 13, 5, 3, 3, 1, 1, 1}), /*relu=*/false), threads);
  // Dynamic batch and plane (out's rows checked at run time: the separate passes kept).
  Conv dynamic = BiasRelu(Constant({2, 25, 12, 10, 11, 3, 3, 1, 1, 1}));
  dynamic.dynamic = true;
  Check(dynamic, threads);
  Conv dynamicInput = BiasRelu({2, 13, 9, 11, 19, 3, 3, 1, 1, 1});
  dynamicInput.dynamic = true;
  Check(dynamicInput, threads);
}

TEST_CASE("depthwise convolutions at awkward sizes match a double reference") {
  // Rows shorter than, equal to and past one vector; stride 2; dilation 2; 5x5 windows.
  Check({1, 7, 9, 5, 7, 3, 3, 1, 1, 7});
  Check({2, 3, 20, 19, 3, 3, 3, 1, 1, 3});
  Check({1, 5, 21, 21, 5, 5, 5, 2, 1, 5});
  Check({1, 4, 14, 14, 4, 3, 3, 1, 2, 4});
}

Conv Padded(Conv k, int64_t pad) {
  k.pad = pad;
  return k;
}

TEST_CASE("depthwise convolutions at MobileNet-like sizes with pads match a double reference") {
  // Channels 1 (a dense 1-channel convolution), 3, 16 (one AVX-512 vector), 17 (one past
  // it), 96; 3x3 and 5x5 windows; stride 1 and 2; dilation 2; explicit pads (a tensor.pad
  // before the convolution); planes of 2x2 to 19x21 outputs (partial 8x8 tiles and partial
  // groups of 4 outputs); a row of 38 outputs at stride 1 (the output-row loop nest).
  Check(Padded({1, 1, 11, 11, 1, 3, 3, 1, 1, 1}, 1));
  Check(Padded({1, 3, 13, 12, 3, 3, 3, 1, 1, 3}, 1));
  Check(Padded({1, 16, 12, 12, 16, 3, 3, 2, 1, 16}, 1));
  Check(Padded({1, 17, 14, 13, 17, 5, 5, 1, 2, 17}, 4));
  Check(Padded({1, 96, 8, 8, 96, 5, 5, 2, 1, 96}, 2));
  Check(Padded({1, 96, 6, 6, 96, 5, 5, 1, 1, 96}, 2));
  Check({1, 17, 21, 23, 17, 3, 3, 1, 1, 17});
  Check({1, 5, 9, 40, 5, 3, 3, 1, 1, 5});
  // Batch 2 with dynamic batch and spatial dims, a pad and a bias + ReLU epilogue.
  Conv dynamic = Padded({2, 17, 11, 14, 17, 3, 3, 1, 1, 17}, 1);
  dynamic.dynamic = true;
  dynamic.epilogue = true;
  Check(dynamic);
  Conv strided = Padded({2, 16, 13, 10, 16, 5, 5, 2, 1, 16}, 2);
  strided.dynamic = true;
  Check(strided);
}

TEST_CASE("depthwise convolutions on staged planes match a double reference at output planes of 1x1 to 9x9") {
  // CPUConvolutionDepthwise.h: each output plane from 1x1 to 9x9, square and one row or
  // column shorter, the window cycling through 3x3, 5x5 and 7x7 padded by 1, 2 and 3 (a
  // tensor.pad before the convolution), stride 1 and 2 alternating, 13 channels (odd).
  for (int64_t o = 1; o <= 9; ++o) {
    int64_t k = 3 + 2 * (o % 3), stride = 1 + o % 2, pad = k / 2;
    int64_t h = (o - 1) * stride + k, w = (std::max<int64_t>(o - 1, 1) - 1) * stride + k;
    Check(Padded({1, 13, h, h, 13, k, k, stride, 1, 13}, pad));
    Check(Padded({1, 13, h, w, 13, k, k, stride, 1, 13}, pad));
  }
}

TEST_CASE("depthwise convolutions on staged planes past one tile match a double reference") {
  // Rows of 148 and 69 outputs (64-column tiles and a partial one), planes of 38 and 14 rows
  // (bands of rows); stride 2 with dilation 2; stride 3 (a masked gather per phase, the last
  // columns of x unread); one channel; dynamic batch and planes in one
  // module at 1x1, 2x2, 9x9 and 4 x 70 outputs, batch 1 to 3, stride 1 and 2.
  Check({1, 3, 40, 150, 3, 3, 3, 1, 1, 3});
  Check(Padded({1, 5, 31, 141, 5, 5, 5, 2, 1, 5}, 2));
  Check({1, 4, 15, 15, 4, 3, 3, 2, 2, 4});
  Check({1, 7, 17, 21, 7, 3, 3, 3, 1, 7});
  Check(Padded({1, 3, 12, 12, 3, 5, 5, 3, 1, 3}, 2));
  Check(Padded({2, 1, 9, 9, 1, 7, 7, 1, 1, 1}, 3));
  CheckOneModuleAtSizes({1, 19, 0, 0, 19, 5, 5, 2, 1, 19}, {{1, 1, 1}, {3, 2, 2}, {2, 9, 9}, {1, 4, 70}});
  CheckOneModuleAtSizes({1, 21, 0, 0, 21, 3, 3, 1, 1, 21}, {{1, 1, 1}, {3, 2, 2}, {2, 9, 9}, {1, 4, 70}});
}

// `k` (x's unpadded extents h0 x w0) padded by the importer's zero pad of {top, left, bottom,
// right}: the pad joins the depthwise convolution's dispatch (fuse-pads-into-depthwise), whose
// kernel stages from the unpadded x (CPUConvolutionDepthwise.h).
Conv ImporterPadded(Conv k, int64_t h0, int64_t w0, std::array<int64_t, 4> pads) {
  k.importerPad = true;
  k.pads = pads;
  k.h = h0 + pads[0] + pads[2];
  k.w = w0 + pads[1] + pads[3];
  return k;
}

TEST_CASE("depthwise convolutions reading the importer's zero pad in their kernel match a double reference") {
  // Pads 1 and 2 (symmetric, and asymmetric as TF-style exports pad: more below and right,
  // or only below and right, or only above and left), stride 1 and 2, 3x3 and 5x5 windows,
  // planes of 1, 3, 7 and 57, odd channel counts, batch 1 and 3; a SiLU joining the dispatch.
  for (int64_t size : {1, 3, 7, 57})
    for (int64_t stride : {1, 2}) {
      Check(ImporterPadded({1, 13, 0, 0, 13, 3, 3, stride, 1, 13}, size, size, {1, 1, 1, 1}));
      Check(ImporterPadded({3, 7, 0, 0, 7, 5, 5, stride, 1, 7}, size, size, {2, 2, 2, 2}));
    }
  Check(ImporterPadded({1, 11, 0, 0, 11, 3, 3, 2, 1, 11}, 8, 9, {0, 0, 1, 1}));
  Check(ImporterPadded({1, 11, 0, 0, 11, 5, 5, 2, 1, 11}, 9, 8, {1, 1, 2, 2}));
  Check(ImporterPadded({3, 5, 0, 0, 5, 3, 3, 1, 1, 5}, 7, 6, {1, 0, 1, 2}));
  Check(ImporterPadded({1, 9, 0, 0, 9, 5, 5, 1, 1, 9}, 7, 13, {2, 1, 0, 3}));
  Check(ImporterPadded({1, 3, 0, 0, 3, 3, 3, 2, 1, 3}, 3, 140, {1, 1, 1, 1}));  // 3 column tiles
  Check(ImporterPadded({1, 7, 0, 0, 7, 3, 3, 1, 2, 7}, 10, 11, {2, 2, 2, 2}));  // dilation 2
  // Split over workgroups along the channels (the pad tiled with its convolution): 240
  // channels of 4x4 (a 5x5 window), 72 of 13x13 at stride 2 (a partial last workgroup).
  Check(ImporterPadded({1, 240, 0, 0, 240, 5, 5, 1, 1, 240}, 4, 4, {2, 2, 2, 2}));
  Check(ImporterPadded({1, 72, 0, 0, 72, 3, 3, 2, 1, 72}, 13, 13, {1, 1, 1, 1}));
  Conv silu = ImporterPadded({1, 17, 0, 0, 17, 3, 3, 2, 1, 17}, 9, 9, {1, 1, 1, 1});
  silu.silu = true;
  Check(silu);
}

// One dynamic-size module of `k` padded by the importer's zero pad of `pads` (a dynamic
// export's pad: its extents tensor.dims, fused into the depthwise convolution's dispatch and
// read from the unpadded x by the kernel, CPUConvolutionDepthwise.h), run in this process at
// each (batch, x's rows, x's columns) of `sizes`.
void CheckImporterPaddedAtSizes(Conv k, std::array<int64_t, 4> pads,
                                std::initializer_list<std::array<int64_t, 3>> sizes) {
  k = ImporterPadded(k, 1, 1, pads);
  k.dynamic = true;
  HostTensor w = RandomF32({k.f, k.cg(), k.kh, k.kw}, 12), bias = RandomF32({k.f}, 13);
  std::string module = CompileOrDie(Source(k, w), "conv_ip_sizes_c" + std::to_string(k.c) + "k" +
                                                      std::to_string(k.kh) + "s" + std::to_string(k.stride) +
                                                      "d" + std::to_string(k.dilation) + (k.silu ? "_silu" : ""));
  for (const auto& [n, h0, w0] : sizes) {
    k.n = n;
    k.h = h0 + pads[0] + pads[2];
    k.w = w0 + pads[1] + pads[3];
    INFO("x " << n << "x" << k.c << "x" << h0 << "x" << w0 << " padded " << pads[0] << "/" << pads[1] << "/"
              << pads[2] << "/" << pads[3] << ", " << k.kh << "x" << k.kw << ", stride " << k.stride
              << ", dilation " << k.dilation << (k.silu ? " + silu" : ""));
    HostTensor x0 = RandomF32({n, k.c, h0, w0}, 11 + n + h0), x = ZerosF32({n, k.c, k.h, k.w});
    for (int64_t p = 0; p < n * k.c; ++p)
      for (int64_t i = 0; i < h0; ++i)
        for (int64_t j = 0; j < w0; ++j)
          F32(x)[(p * k.h + i + pads[0]) * k.w + j + pads[1]] = F32(x0)[(p * h0 + i) * w0 + j];
    HostTensor expected = Reference(k, x, w, bias);
    for (const char* threads : {"--cpu-threads=0", "--cpu-threads=2"}) {
      INFO(threads);
      auto out = RunOrDie(module, "main", {x0, w, bias}, 1, "cpu", threads);
      RequireClose(out[0], expected, 1e-5, 1e-4);
    }
  }
}

TEST_CASE("depthwise convolutions reading a zero pad of run-time extents in their kernel match a double reference") {
  // A dynamic export's pads joined to their depthwise convolutions, each module at several
  // sizes: planes of 1 and 2 (most taps read only the pad: each tile tests its taps), odd
  // planes, a 16-wide plane (tile rows chosen from its pitch), 3 column tiles (140),
  // batch 3, stride 2, dilation 2, pads on one side only, 240 channels split over
  // workgroups, a SiLU joining the dispatch.
  CheckImporterPaddedAtSizes({1, 13, 0, 0, 13, 3, 3, 1, 1, 13}, {1, 1, 1, 1},
                             {{1, 1, 1}, {3, 2, 2}, {1, 7, 5}, {2, 16, 16}, {1, 3, 140}});
  CheckImporterPaddedAtSizes({1, 7, 0, 0, 7, 5, 5, 2, 1, 7}, {2, 2, 2, 2},
                             {{1, 1, 1}, {1, 2, 2}, {3, 9, 9}, {1, 4, 70}, {2, 33, 17}});
  CheckImporterPaddedAtSizes({1, 11, 0, 0, 11, 3, 3, 2, 1, 11}, {0, 0, 1, 1}, {{1, 2, 2}, {3, 8, 9}, {1, 13, 13}});
  CheckImporterPaddedAtSizes({1, 5, 0, 0, 5, 5, 5, 1, 1, 5}, {2, 1, 0, 3}, {{1, 2, 3}, {2, 7, 13}});
  CheckImporterPaddedAtSizes({1, 7, 0, 0, 7, 3, 3, 1, 2, 7}, {2, 2, 2, 2}, {{1, 1, 1}, {1, 2, 2}, {3, 10, 11}});
  CheckImporterPaddedAtSizes({1, 240, 0, 0, 240, 5, 5, 1, 1, 240}, {2, 2, 2, 2}, {{1, 2, 2}, {1, 4, 4}, {2, 9, 7}});
  Conv silu{1, 17, 0, 0, 17, 3, 3, 2, 1, 17};
  silu.silu = true;
  CheckImporterPaddedAtSizes(silu, {1, 1, 1, 1}, {{1, 1, 1}, {2, 9, 9}});
}

TEST_CASE("depthwise convolutions on small padded planes whose taps partly read only the pad match a double reference") {
  // CPUConvolutionDepthwise.h, live taps: a plane of one tile skips the taps that read only
  // the importer's zero pad at every output. 5x5 and 7x7 windows over planes of 1 to 7 (1x1:
  // the center tap only; 2x2: 9 of 25; 3 x 5: rows and columns apart), stride 1 and 2,
  // asymmetric pads (only below and right, only above and left, a row of 1 x 7), dilation 2
  // (3x3 over 2x2 padded by 2: the center tap only), odd channel counts, batch 2; a SiLU
  // joining the dispatch.
  for (int64_t size = 1; size <= 7; ++size) {
    Check(ImporterPadded({1, 19, 0, 0, 19, 5, 5, 1, 1, 19}, size, size, {2, 2, 2, 2}));
    Check(ImporterPadded({1, 9, 0, 0, 9, 7, 7, 1 + size % 2, 1, 9}, size, std::max<int64_t>(size - 2, 1), {3, 3, 3, 3}));
  }
  Check(ImporterPadded({2, 5, 0, 0, 5, 5, 5, 2, 1, 5}, 2, 2, {2, 2, 2, 2}));
  Check(ImporterPadded({1, 7, 0, 0, 7, 5, 5, 1, 1, 7}, 3, 5, {0, 0, 4, 4}));
  Check(ImporterPadded({1, 7, 0, 0, 7, 5, 5, 1, 1, 7}, 3, 5, {4, 4, 0, 0}));
  Check(ImporterPadded({1, 3, 0, 0, 3, 5, 5, 1, 1, 3}, 1, 7, {2, 2, 2, 2}));
  Check(ImporterPadded({1, 11, 0, 0, 11, 3, 3, 1, 2, 11}, 2, 2, {2, 2, 2, 2}));
  Conv silu = ImporterPadded({1, 33, 0, 0, 33, 5, 5, 1, 1, 33}, 2, 2, {2, 2, 2, 2});
  silu.silu = true;
  Check(silu);
}

TEST_CASE("depthwise convolutions with channels in the lanes on small static planes match a double reference") {
  // CPUConvolutionDepthwise.h, channel lanes: outputs of 1x1, 2x2, 3x3, 4x4 and 2 x 4 from
  // inputs of at most 36 elements; channel counts below, at and past a vector (1, 15, 16, 17,
  // 47, 97: a masked last block); 3x3, 5x5 and 7x7 windows; stride 2; dilation 2; the
  // importer's pad read in the kernel and a plain padded input; batch 3; a bias + ReLU and a
  // SiLU epilogue.
  for (int64_t c : {1, 15, 16, 17, 47, 97}) {
    Check(ImporterPadded({1, c, 0, 0, c, 5, 5, 1, 1, c}, 2, 2, {2, 2, 2, 2}));
    Check(ImporterPadded({1, c, 0, 0, c, 5, 5, 1, 1, c}, 4, 4, {2, 2, 2, 2}));
    Check(ImporterPadded({1, c, 0, 0, c, 3, 3, 2, 1, c}, 6, 6, {1, 1, 1, 1}));
  }
  Check(ImporterPadded({3, 23, 0, 0, 23, 7, 7, 1, 1, 23}, 1, 1, {3, 3, 3, 3}));
  Check(ImporterPadded({1, 29, 0, 0, 29, 3, 3, 1, 1, 29}, 3, 3, {1, 1, 1, 1}));
  Check(ImporterPadded({1, 21, 0, 0, 21, 3, 3, 1, 2, 21}, 4, 4, {2, 2, 2, 2}));
  Check(ImporterPadded({1, 18, 0, 0, 18, 5, 5, 2, 1, 18}, 4, 8, {2, 2, 1, 1}));
  Check({2, 19, 4, 4, 19, 3, 3, 1, 1, 19});
  Check(Padded({1, 35, 4, 4, 35, 3, 3, 1, 1, 35}, 1));
  Conv relu = ImporterPadded({1, 33, 0, 0, 33, 5, 5, 1, 1, 33}, 4, 4, {2, 2, 2, 2});
  relu.epilogue = true;
  Check(relu);
  Conv silu = ImporterPadded({2, 41, 0, 0, 41, 3, 3, 1, 1, 41}, 2, 2, {1, 1, 1, 1});
  silu.silu = true;
  Check(silu);
}

TEST_CASE("dynamic-size depthwise convolutions choose channel lanes by the run-time plane size and match a double reference") {
  // CPUConvolutionDepthwise.h, plane-size variants: one module per geometry, run at every
  // square plane a channel-lane variant is specialised on (outputs 1 x 1 to 4 x 4; at
  // stride 2 both input sizes of each output size), at planes of a static-extent staged
  // variant (4 x 4 from 8 x 8 at stride 2, 7 x 7, 8 x 8, 14 x 14, 16 x 16 outputs) and at
  // planes that take the staged kernel of dynamic extents (5 x 5 outputs, 27 x 27 inputs,
  // non-square planes, inputs that no variant lists):
  // batch 1 and 3; channel counts past a vector (a masked last block: 19, 33, 97) and below
  // one (5); 5x5 and 3x3 windows with the importer's pad, one-sided pads, dilation 2; an
  // unpadded window (the input o + 2 wide); a SiLU joining the dispatch.
  CheckImporterPaddedAtSizes({1, 97, 0, 0, 97, 5, 5, 1, 1, 97}, {2, 2, 2, 2},
                             {{1, 1, 1}, {3, 2, 2}, {1, 3, 3}, {2, 4, 4}, {1, 5, 5}, {1, 2, 3}, {3, 4, 1}, {1, 7, 7},
                              {3, 8, 8}, {1, 14, 14}, {1, 16, 16}, {1, 16, 15}});
  CheckImporterPaddedAtSizes({1, 33, 0, 0, 33, 5, 5, 2, 1, 33}, {2, 2, 2, 2},
                             {{1, 1, 1}, {3, 2, 2}, {1, 3, 3}, {1, 4, 4}, {2, 5, 5}, {1, 6, 6}, {1, 7, 7}, {1, 6, 5},
                              {1, 8, 8}, {1, 13, 13}, {2, 16, 16}, {1, 27, 27}, {1, 32, 32}});
  CheckImporterPaddedAtSizes({1, 19, 0, 0, 19, 3, 3, 2, 1, 19}, {0, 0, 1, 1},
                             {{1, 2, 2}, {3, 3, 3}, {1, 4, 4}, {1, 6, 6}, {1, 14, 14}, {1, 15, 15}, {3, 16, 16}});
  CheckImporterPaddedAtSizes({1, 5, 0, 0, 5, 3, 3, 1, 2, 5}, {2, 2, 2, 2}, {{1, 1, 1}, {3, 2, 2}, {1, 4, 4}, {1, 5, 5}});
  Conv silu{1, 19, 0, 0, 19, 3, 3, 1, 1, 19};
  silu.silu = true;
  CheckImporterPaddedAtSizes(silu, {1, 1, 1, 1}, {{3, 1, 1}, {1, 2, 2}, {1, 3, 3}, {3, 4, 4}, {1, 9, 9}});
  CheckOneModuleAtSizes({1, 17, 0, 0, 17, 3, 3, 1, 1, 17},
                        {{1, 1, 1}, {3, 2, 2}, {1, 4, 4}, {1, 5, 5}, {1, 2, 3}, {1, 7, 7}, {3, 8, 8}, {1, 16, 16}});
}

TEST_CASE("grouped convolutions and a depthwise multiplier match a double reference") {
  // Two groups of three channels; two filters per channel (not depthwise: the loop lowering).
  Check({1, 6, 8, 9, 4, 3, 3, 1, 1, 2});
  Check({1, 3, 7, 7, 6, 3, 3, 1, 1, 3});
}

TEST_CASE("convolutions with dynamic batch and spatial dims and a fused epilogue match a double reference") {
  Conv dense{2, 5, 12, 10, 11, 3, 3, 1, 1, 1};
  dense.dynamic = true;
  dense.epilogue = true;
  Check(dense);
  Conv strided{1, 4, 15, 14, 6, 3, 3, 2, 1, 1};  // a window of x's plane (column 13 unread)
  strided.dynamic = true;
  Check(strided);
  Conv depthwise{2, 6, 11, 13, 6, 3, 3, 2, 1, 6};
  depthwise.dynamic = true;
  depthwise.epilogue = true;
  Check(depthwise);
  Conv stem{1, 3, 37, 37, 16, 7, 7, 2, 1, 1};
  stem.epilogue = true;
  Check(stem);
}

}  // namespace
}  // namespace hexir::e2e
