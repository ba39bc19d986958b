// ONNX signal processing (onnx/defs/math, opset 17): DFT and STFT as one reduction generic
// each over a twiddle table computed at import time, MelWeightMatrix computed at import.
// A signal's last dim holds one (real) or two (real, imaginary) parts; a spectrum's holds two.
// Output part c of bin k sums re[n] * A[k][n][c] + im[n] * B[k][n][c] over the samples n,
// where A and B hold cos/sin of 2 pi k n / N (signs by direction, 1/N for the inverse): an
// O(K N) dense DFT per output row, no FFT, exact enough that np.fft's zeros stay below 1e-5.
#include <cmath>
#include <cstring>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// The tables A and B ([bins, size, 2]) of a DFT of `size` samples, forward or inverse.
struct Twiddles {
  Val a, b;
};

// Little-endian bytes of `values` as f32 or f64.
std::string RawBytes(const std::vector<double>& values, const std::string& et) {
  std::string raw(values.size() * ElementBytes(et), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    if (et == "f32") {
      float f = static_cast<float>(values[i]);
      std::memcpy(raw.data() + 4 * i, &f, 4);
    } else {
      std::memcpy(raw.data() + 8 * i, &values[i], 8);
    }
  }
  return raw;
}

Val TableOf(const std::vector<double>& values, int64_t bins, int64_t samples, const std::string& et) {
  Val t;
  t.et = et;
  t.shape = {Dim::Static(bins), Dim::Static(samples), Dim::Static(2)};
  t.raw = RawBytes(values, et);
  return t;
}

Twiddles TwiddlesOf(int64_t bins, int64_t size, bool inverse, const std::string& et) {
  // Forward: (re + i im)(cos - i sin); inverse: (re + i im)(cos + i sin) / N.
  std::vector<double> a, b;
  double scale = inverse ? 1.0 / static_cast<double>(size) : 1.0;
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    for (int64_t n = 0; n < size; ++n) {
      // k n mod N keeps the angle small, so exact zeros of sin/cos stay near 1e-16.
      double angle = 2 * M_PI * static_cast<double>((k * n) % size) / static_cast<double>(size);
      double cs = std::cos(angle) * scale, sn = std::sin(angle) * scale;
      a.push_back(cs);
      a.push_back(sign * sn);
      b.push_back(-sign * sn);
      b.push_back(cs);
    }
  }
  return {TableOf(a, bins, size, et), TableOf(b, bins, size, et)};
}

Status CheckSignal(Context& c, const Val& x, const char* what) {
  if (x.et != "f32" && x.et != "f64")
    return c.Error(std::string(what) + " of element type " + x.et + " is not supported (f32 and f64 are)");
  const Dim& parts = x.shape.back();
  if (parts.dynamic() || (parts.v != 1 && parts.v != 2))
    return c.Error(std::string(what) + "'s last dim must be 1 (real) or 2 (complex), got " + Builder::TensorType(x));
  return Status::Ok();
}

// Sums over loop `n` (the last loop) of re * A + im * B (+ times a window); `x_maps` reads
// the real part (and the imaginary part when the signal is complex).
std::string SumOverSamples(Context& c, Val& x, const std::vector<std::string>& x_maps, Val* window,
                           const std::string& window_map, Twiddles& t, const std::string& table_map,
                           const Shape& out, int loops) {
  Builder& b = c.b;
  const std::string& et = x.et;
  c.Mat(t.a);
  bool complex = x_maps.size() == 2;
  if (complex) c.Mat(t.b);
  std::vector<const Val*> ins = {&x};
  std::vector<std::string> maps = {x_maps[0]};
  if (complex) {
    ins.push_back(&x);
    maps.push_back(x_maps[1]);
  }
  if (window) {
    ins.push_back(window);
    maps.push_back(window_map);
  }
  ins.push_back(&t.a);
  maps.push_back(table_map);
  if (complex) {
    ins.push_back(&t.b);
    maps.push_back(table_map);
  }
  std::vector<std::string> out_dims;
  for (size_t i = 0; i < out.size(); ++i) out_dims.push_back("d" + std::to_string(i));
  std::vector<std::string> iters(out.size(), "parallel");
  iters.push_back("reduction");
  std::string zeros = b.Filled(out, et, 0);
  return b.Generic(ins, maps, Builder::Map(loops, out_dims), out, et, loops, iters, zeros, [&](const Args& a) {
    size_t i = 0;
    std::string re = a[i++];
    std::string im = complex ? a[i++] : "";
    std::string w = window ? a[i++] : "";
    std::string ta = a[i++];
    std::string tb = complex ? a[i++] : "";
    std::string term = b.Bin("arith.mulf", "", re, ta, et);
    if (complex) term = b.Bin("arith.addf", "", term, b.Bin("arith.mulf", "", im, tb, et), et);
    if (window) term = b.Bin("arith.mulf", "", term, w, et);
    return b.Bin("arith.addf", "", a[i], term, et);
  });
}

// An optional scalar integer operand that must be known at import time.
StatusOr<int64_t> OptionalConstScalar(Context& c, int i, const char* what, int64_t absent) {
  if (!c.HasIn(i)) return absent;
  HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> ints, c.ConstInts(v, what));
  if (ints.size() != 1) return c.Error(std::string(what) + " must hold one value");
  return ints[0];
}

}  // namespace

// DFT (opset 17-19: axis attribute, optional dft_length input): a signal [batch, ..., N, ...,
// 1|2] -> [batch, ..., K, ..., 2] along `axis`, K = dft_length (or N), onesided K/2 + 1. The
// signal is zero-padded or cut to dft_length first.
Status LowerDFT(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& signal, c.In(0));
  HEXIR_RETURN_IF_ERROR(CheckSignal(c, signal, "the signal"));
  int64_t r = signal.rank();
  if (r < 3) return c.Error("the signal must have rank 3 or more ([batch, ..., 1|2]), got " + Builder::TensorType(signal));
  int64_t axis = c.AttrI("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 1 || axis > r - 2)
    return c.Error("axis " + std::to_string(c.AttrI("axis", 1)) + " is not a signal dim of " + Builder::TensorType(signal));
  bool inverse = c.AttrI("inverse", 0) != 0, onesided = c.AttrI("onesided", 0) != 0;
  bool complex = signal.shape.back().v == 2;
  if (onesided && (inverse || complex))
    return c.Error("onesided is defined for a forward DFT of a real signal only");
  const Dim& length = signal.shape[axis];
  if (length.dynamic()) return c.Error("the signal length along axis " + std::to_string(axis) + " must be static");
  HEXIR_ASSIGN_OR_RETURN(int64_t size, OptionalConstScalar(c, 1, "dft_length", length.v));
  if (size <= 0) return c.Error("dft_length must be positive");
  Val x = signal;
  if (length.v != size) {  // zero-pad or cut to the DFT's size
    std::vector<Dim> begin(r, Dim::Static(0)), end(r, Dim::Static(0));
    end[axis] = Dim::Static(size - length.v);
    x = c.Pad(signal, begin, end, "constant", 0);
  }
  c.Mat(x);
  int64_t bins = onesided ? size / 2 + 1 : size;
  Twiddles t = TwiddlesOf(bins, size, inverse, x.et);
  Shape out = x.shape;
  out[axis] = Dim::Static(bins);
  out.back() = Dim::Static(2);
  int loops = static_cast<int>(r + 1);
  std::string n = "d" + std::to_string(r), k = "d" + std::to_string(axis), part = "d" + std::to_string(r - 1);
  std::vector<std::string> re_map, im_map;
  for (int64_t i = 0; i < r; ++i) {
    std::string d = i == axis ? n : "d" + std::to_string(i);
    re_map.push_back(i == r - 1 ? "0" : d);
    im_map.push_back(i == r - 1 ? "1" : d);
  }
  std::vector<std::string> x_maps = {Builder::Map(loops, re_map)};
  if (complex) x_maps.push_back(Builder::Map(loops, im_map));
  Val y;
  y.et = x.et;
  y.shape = out;
  y.name = SumOverSamples(c, x, x_maps, nullptr, "", t, Builder::Map(loops, {k, n, part}), out, loops);
  c.SetOut(0, y);
  return Status::Ok();
}

// STFT (opset 17): signal [batch, L, 1|2], frame_step, optional window [W] and frame_length
// (both absent: an error) -> [batch, frames, bins, 2], frames = (L - frame_length) / step + 1,
// bins = frame_length / 2 + 1 when onesided (the default).
Status LowerSTFT(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& signal, c.In(0));
  HEXIR_RETURN_IF_ERROR(CheckSignal(c, signal, "the signal"));
  if (signal.rank() != 3) return c.Error("the signal must be [batch, length, 1|2], got " + Builder::TensorType(signal));
  HEXIR_ASSIGN_OR_RETURN(int64_t step, OptionalConstScalar(c, 1, "frame_step", -1));
  if (step <= 0) return c.Error("frame_step must be positive");
  Val* window = nullptr;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& w, c.In(2));
    if (w.rank() != 1 || w.shape[0].dynamic()) return c.Error("the window must be 1-D of static length, got " + Builder::TensorType(w));
    if (w.et != signal.et) return c.Error("the window's element type " + w.et + " differs from the signal's " + signal.et);
    window = &w;
  }
  int64_t window_length = window ? window->shape[0].v : -1;
  HEXIR_ASSIGN_OR_RETURN(int64_t frame_length, OptionalConstScalar(c, 3, "frame_length", window_length));
  if (frame_length <= 0) return c.Error("frame_length (or a window) must be given and positive");
  if (window && window_length != frame_length)
    return c.Error("the window has " + std::to_string(window_length) + " samples, frame_length is " + std::to_string(frame_length));
  bool onesided = c.AttrI("onesided", 1) != 0;
  bool complex = signal.shape.back().v == 2;
  if (onesided && complex) return c.Error("onesided is defined for a real signal only");
  const Dim& length = signal.shape[1];
  if (!length.dynamic() && length.v < frame_length)
    return c.Error("the signal has " + std::to_string(length.v) + " samples, fewer than frame_length " + std::to_string(frame_length));
  Builder& b = c.b;
  c.Mat(signal);
  if (window) c.Mat(*window);
  Dim frames = b.Add(b.FloorDiv(b.Sub(length, Dim::Static(frame_length)), Dim::Static(step)), Dim::Static(1));
  int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  Twiddles t = TwiddlesOf(bins, frame_length, /*inverse=*/false, signal.et);
  Shape out = {signal.shape[0], frames, Dim::Static(bins), Dim::Static(2)};
  // Loops (batch, frame, bin, part, sample); sample n of frame f is signal[f * step + n].
  const int loops = 5;
  std::string at = "d1 * " + std::to_string(step) + " + d4";
  std::vector<std::string> x_maps = {Builder::Map(loops, {"d0", at, "0"})};
  if (complex) x_maps.push_back(Builder::Map(loops, {"d0", at, "1"}));
  Val y;
  y.et = signal.et;
  y.shape = out;
  y.name = SumOverSamples(c, signal, x_maps, window, Builder::Map(loops, {"d4"}), t, Builder::Map(loops, {"d2", "d4", "d3"}),
                          out, loops);
  c.SetOut(0, y);
  return Status::Ok();
}

// MelWeightMatrix (opset 17): [dft_length / 2 + 1, num_mel_bins] triangular filters, computed
// at import from its constant operands. The num_mel_bins + 2 band edges are spaced evenly on the
// mel scale (2595 log10(1 + f / 700)) over [lower, upper] hertz and mapped to spectrogram bins
// floor((dft_length + 1) f / sample_rate); filter i rises from edge i to edge i + 1 and falls to
// edge i + 2 (an empty rise puts 1 at its center).
Status LowerMelWeightMatrix(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(int64_t mel_bins, OptionalConstScalar(c, 0, "num_mel_bins", -1));
  HEXIR_ASSIGN_OR_RETURN(int64_t dft_length, OptionalConstScalar(c, 1, "dft_length", -1));
  HEXIR_ASSIGN_OR_RETURN(int64_t sample_rate, OptionalConstScalar(c, 2, "sample_rate", -1));
  HEXIR_ASSIGN_OR_RETURN(Val& lower_in, c.In(3));
  HEXIR_ASSIGN_OR_RETURN(Val& upper_in, c.In(4));
  HEXIR_ASSIGN_OR_RETURN(std::vector<double> lower, c.ConstFloats(lower_in, "lower_edge_hertz"));
  HEXIR_ASSIGN_OR_RETURN(std::vector<double> upper, c.ConstFloats(upper_in, "upper_edge_hertz"));
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    return c.Error("num_mel_bins, dft_length and sample_rate must be positive");
  if (lower.size() != 1 || upper.size() != 1) return c.Error("the edge frequencies must be scalars");
  if (!(0 <= lower[0] && lower[0] < upper[0] && upper[0] <= sample_rate / 2.0))
    return c.Error("the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2");
  std::string et = Context::ElementType(static_cast<int>(c.AttrI("output_datatype", ::onnx::TensorProto::FLOAT)));
  if (et != "f32" && et != "f64")
    return c.Error("output_datatype " + std::to_string(c.AttrI("output_datatype", 0)) + " is not supported (float and double are)");
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  int64_t edges = mel_bins + 2, spectrum_bins = dft_length / 2 + 1;
  double low = mel(lower[0]), step = (mel(upper[0]) - low) / static_cast<double>(edges);
  std::vector<int64_t> edge;
  for (int64_t i = 0; i < edges; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + low) / 2595) - 1);
    edge.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate))));
  }
  std::vector<double> w(static_cast<size_t>(spectrum_bins * mel_bins), 0.0);
  auto set = [&](int64_t bin, int64_t filter, double value) {
    if (bin >= 0 && bin < spectrum_bins) w[static_cast<size_t>(bin * mel_bins + filter)] = value;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
    if (center == left) {
      set(center, i, 1);
    } else {
      for (int64_t j = left; j <= center; ++j) set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
    }
    for (int64_t j = center; j < right; ++j) set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
  }
  Val m;
  m.et = et;
  m.shape = {Dim::Static(spectrum_bins), Dim::Static(mel_bins)};
  if (spectrum_bins * mel_bins <= kMaxKnownElements) {
    m.has_floats = true;
    for (double v : w) m.floats.push_back(et == "f32" ? static_cast<float>(v) : v);
  }
  m.raw = RawBytes(w, et);
  c.SetOut(0, m);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
