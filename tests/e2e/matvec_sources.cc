#include "tests/e2e/matvec_sources.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "base/half_float.h"
#include "compiler/importers/llama/BlockDecode.h"

namespace hexir::e2e {
namespace {
using compiler::llama::GgmlBlockInfo;
using tools::HostTensor;

// get_scale_min_k4 of ggml (the K-quants' 6-bit scales and mins).
void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63, *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace

std::string Dim(int64_t d) { return d < 0 ? "?" : std::to_string(d); }
std::string MatrixType(int64_t a, int64_t b, const char* elem) { return "tensor<" + Dim(a) + "x" + Dim(b) + "x" + elem + ">"; }

std::string Output(int64_t n, const std::string& wType, const std::string& out) {
  if (n >= 0) return "  %e = tensor.empty() : " + out + "\n";
  return "  %c0 = arith.constant 0 : index\n  %n = tensor.dim %w, %c0 : " + wType + "\n  %e = tensor.empty(%n) : " + out + "\n";
}

std::string BlockMatvecSource(const std::string& name, const GgmlBlockInfo& format, int64_t n, int64_t k,
                              bool residual) {
  const int64_t bs = format.block_elements, nb = k / bs;
  std::string w = MatrixType(n, format.RowBytes(k), "i8"), x = "tensor<" + std::to_string(k) + "xf32>",
              xb = MatrixType(nb, bs, "f32"), y = "tensor<" + Dim(n) + "xf32>";
  std::string s = "func.func @" + name + "(%w: " + w + ", %x: " + x + (residual ? ", %r: " + y : "") + ") -> " + y +
                  " {\n" +
                  "  %z = arith.constant 0.0 : f32\n" + Output(n, w, y) + "  %f = linalg.fill ins(%z : f32) outs(%e : " +
                  y + ") -> " + y + "\n  %xb = tensor.expand_shape %x [[0, 1]] output_shape [" + std::to_string(nb) +
                  ", " + std::to_string(bs) + "] : " + x + " into " + xb + "\n";
  s += "  %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], "
       "iterator_types = [\"parallel\", \"reduction\", \"reduction\"], hexir.block_matvec = \"" +
       std::string(format.name) + "\"} ins(%xb : " + xb + ") outs(%f : " + y + ") {\n  ^bb0(%a: f32, %o: f32):\n";
  std::string body = "    %i0 = linalg.index 0 : index\n    %i1 = linalg.index 1 : index\n    %i2 = linalg.index 2 : index\n";
  int fresh = 0;
  std::string wf = compiler::llama::DecodeBlockElement(format, "%w", w, "%i0", "%i1", "%i2",
                                                       [&] { return "%d" + std::to_string(fresh++); }, "    ", &body);
  s += body + "    %p = arith.mulf %a, " + wf + " : f32\n    %s = arith.addf %o, %p : f32\n    linalg.yield %s : f32\n  } -> " +
       y + "\n";
  if (!residual) return s + "  return %y : " + y + "\n}\n";
  s += n >= 0 ? "  %e2 = tensor.empty() : " + y + "\n" : "  %e2 = tensor.empty(%n) : " + y + "\n";
  return s + "  %out = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, "
             "affine_map<(i) -> (i)>], iterator_types = [\"parallel\"]} ins(%y, %r : " + y + ", " + y + ") outs(%e2 : " +
             y + ") {\n  ^bb0(%v: f32, %rv: f32, %unused: f32):\n    %t = arith.addf %v, %rv : f32\n"
             "    linalg.yield %t : f32\n  } -> " + y + "\n  return %out : " + y + "\n}\n";
}

std::string BlockMatvecRowWriteSource(const std::string& name, const GgmlBlockInfo& format, int64_t n, int64_t k,
                                      int64_t rows) {
  std::string product = BlockMatvecSource(name + "_product", format, n, k);
  std::string y = "tensor<" + std::to_string(n) + "xf32>", cache = MatrixType(rows, n, "f32");
  // The product's body, then the write instead of its return.
  const std::string tail = "  return %y : " + y + "\n}\n";
  product.replace(0, product.find(')'), "func.func @" + name + "(%w: " + MatrixType(n, format.RowBytes(k), "i8") +
                                              ", %x: tensor<" + std::to_string(k) + "xf32>, %cache: " + cache +
                                              ", %at: i64");
  product.replace(product.find(") -> " + y + " {"), (") -> " + y + " {").size(), ") -> " + cache + " {");
  product.replace(product.rfind(tail), tail.size(),
                  "  %p = arith.index_cast %at : i64 to index\n  %row = tensor.expand_shape %y [[0, 1]] output_shape [1, " +
                      std::to_string(n) + "] : " + y + " into " + MatrixType(1, n, "f32") +
                      "\n  %written = tensor.insert_slice %row into %cache[%p, 0] [1, " + std::to_string(n) + "] [1, 1] : " +
                      MatrixType(1, n, "f32") + " into " + cache + "\n  return %written : " + cache + "\n}\n");
  return product;
}

std::string BlockMatvecSiblingSource(const std::string& name, const GgmlBlockInfo& format, int64_t n, int64_t k) {
  const int64_t bs = format.block_elements, nb = k / bs;
  std::string w = MatrixType(n, format.RowBytes(k), "i8"), x = "tensor<" + std::to_string(k) + "xf32>",
              xb = MatrixType(nb, bs, "f32"), y = "tensor<" + std::to_string(n) + "xf32>";
  std::string s = "func.func @" + name + "(%w1: " + w + ", %w3: " + w + ", %x: " + x + ") -> " + y + " {\n" +
                  "  %z = arith.constant 0.0 : f32\n  %one = arith.constant 1.0 : f32\n";
  for (const char* v : {"1", "3"}) {
    const std::string id = v;
    s += "  %e" + id + " = tensor.empty() : " + y + "\n  %f" + id + " = linalg.fill ins(%z : f32) outs(%e" + id +
         " : " + y + ") -> " + y + "\n  %xb" + id + " = tensor.expand_shape %x [[0, 1]] output_shape [" +
         std::to_string(nb) + ", " + std::to_string(bs) + "] : " + x + " into " + xb + "\n";
    s += "  %y" + id +
         " = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], "
         "iterator_types = [\"parallel\", \"reduction\", \"reduction\"], hexir.block_matvec = \"" +
         std::string(format.name) + "\"} ins(%xb" + id + " : " + xb + ") outs(%f" + id + " : " + y +
         ") {\n  ^bb0(%a: f32, %o: f32):\n";
    std::string body = "    %i0 = linalg.index 0 : index\n    %i1 = linalg.index 1 : index\n    %i2 = linalg.index 2 : index\n";
    int fresh = 0;
    std::string wf = compiler::llama::DecodeBlockElement(format, "%w" + id, w, "%i0", "%i1", "%i2",
                                                         [&] { return "%d" + std::to_string(fresh++); }, "    ", &body);
    s += body + "    %p = arith.mulf %a, " + wf + " : f32\n    %s = arith.addf %o, %p : f32\n    linalg.yield %s : f32\n  } -> " +
         y + "\n";
  }
  return s + "  %e = tensor.empty() : " + y +
         "\n  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], "
         "iterator_types = [\"parallel\"]} ins(%y1, %y3 : " + y + ", " + y + ") outs(%e : " + y +
         ") {\n  ^bb0(%a: f32, %c: f32, %u: f32):\n    %na = arith.negf %a : f32\n    %ex = math.exp %na : f32\n"
         "    %den = arith.addf %ex, %one : f32\n    %sg = arith.divf %one, %den : f32\n    %silu = arith.mulf %a, %sg : f32\n"
         "    %r = arith.mulf %silu, %c : f32\n    linalg.yield %r : f32\n  } -> " + y + "\n  return %g : " + y + "\n}\n";
}

std::string RmsNormedSource(const std::string& source, int64_t k) {
  const std::string x = "tensor<" + std::to_string(k) + "xf32>", input = "%x: " + x;
  const size_t header = source.find('\n'), at = source.find(input);
  if (header == std::string::npos || at == std::string::npos || at > header) return "";
  std::string norm =
      "  %nz = arith.constant 0.0 : f32\n  %ne = tensor.empty() : tensor<f32>\n"
      "  %nf = linalg.fill ins(%nz : f32) outs(%ne : tensor<f32>) -> tensor<f32>\n"
      "  %nss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = "
      "[\"reduction\"]} ins(%x0 : " + x + ") outs(%nf : tensor<f32>) {\n  ^bb0(%na: f32, %no: f32):\n"
      "    %nq = arith.mulf %na, %na : f32\n    %nr = arith.addf %no, %nq : f32\n    linalg.yield %nr : f32\n"
      "  } -> tensor<f32>\n  %nxe = tensor.empty() : " + x + "\n"
      "  %x = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>, "
      "affine_map<(i) -> (i)>], iterator_types = [\"parallel\"]} ins(%x0, %nss, %nw : " + x + ", tensor<f32>, " + x +
      ") outs(%nxe : " + x + ") {\n  ^bb0(%na: f32, %ns: f32, %ng: f32, %no: f32):\n"
      "    %nk = arith.constant " + std::to_string(k) + ".0 : f32\n    %nm = arith.divf %ns, %nk : f32\n"
      "    %neps = arith.constant 1.0e-05 : f32\n    %nv = arith.addf %nm, %neps : f32\n"
      "    %nsq = math.sqrt %nv : f32\n    %none = arith.constant 1.0 : f32\n    %ninv = arith.divf %none, %nsq : f32\n"
      "    %nt = arith.mulf %ninv, %na : f32\n    %nu = arith.mulf %ng, %nt : f32\n    linalg.yield %nu : f32\n"
      "  } -> " + x + "\n";
  std::string out = source.substr(0, at) + "%x0: " + x + ", %nw: " + x + source.substr(at + input.size(), header + 1 - at - input.size());
  return out + norm + source.substr(header + 1);
}

std::string BlockMatmulRowsSource(const std::string& name, const GgmlBlockInfo& format, int64_t n, int64_t k) {
  const int64_t bs = format.block_elements, nb = k / bs;
  std::string w = MatrixType(n, format.RowBytes(k), "i8"), x = MatrixType(-1, k, "f32"),
              xb = "tensor<?x" + std::to_string(nb) + "x" + std::to_string(bs) + "xf32>", y = MatrixType(-1, n, "f32");
  std::string s = "func.func @" + name + "(%w: " + w + ", %x: " + x + ") -> " + y + " {\n" +
                  "  %z = arith.constant 0.0 : f32\n  %c0 = arith.constant 0 : index\n  %m = tensor.dim %x, %c0 : " +
                  x + "\n  %e = tensor.empty(%m) : " + y + "\n  %f = linalg.fill ins(%z : f32) outs(%e : " + y +
                  ") -> " + y + "\n  %xb = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, " +
                  std::to_string(nb) + ", " + std::to_string(bs) + "] : " + x + " into " + xb + "\n";
  s += "  %y = linalg.generic {indexing_maps = [affine_map<(m, n, b, j) -> (m, b, j)>, affine_map<(m, n, b, j) -> (m, "
       "n)>], iterator_types = [\"parallel\", \"parallel\", \"reduction\", \"reduction\"], hexir.block_matvec = \"" +
       std::string(format.name) + "\"} ins(%xb : " + xb + ") outs(%f : " + y + ") {\n  ^bb0(%a: f32, %o: f32):\n";
  std::string body = "    %i0 = linalg.index 1 : index\n    %i1 = linalg.index 2 : index\n    %i2 = linalg.index 3 : index\n";
  int fresh = 0;
  std::string wf = compiler::llama::DecodeBlockElement(format, "%w", w, "%i0", "%i1", "%i2",
                                                       [&] { return "%d" + std::to_string(fresh++); }, "    ", &body);
  return s + body + "    %p = arith.mulf %a, " + wf +
         " : f32\n    %s = arith.addf %o, %p : f32\n    linalg.yield %s : f32\n  } -> " + y + "\n  return %y : " + y +
         "\n}\n";
}

float HalfAt(const uint8_t* p) { return HalfToFloat(uint16_t(p[0] | p[1] << 8)); }

void DequantizeBlock(const GgmlBlockInfo& format, const uint8_t* b, double* y) {
  std::string name = format.name;
  if (name == "q8_0") {
    for (int j = 0; j < 32; ++j) y[j] = double(HalfAt(b)) * int8_t(b[2 + j]);
  } else if (name == "q4_0") {
    for (int j = 0; j < 16; ++j) {
      y[j] = double(HalfAt(b)) * ((b[2 + j] & 0xF) - 8);
      y[j + 16] = double(HalfAt(b)) * ((b[2 + j] >> 4) - 8);
    }
  } else if (name == "q4_1") {
    for (int j = 0; j < 16; ++j) {
      y[j] = double(HalfAt(b)) * (b[4 + j] & 0xF) + HalfAt(b + 2);
      y[j + 16] = double(HalfAt(b)) * (b[4 + j] >> 4) + HalfAt(b + 2);
    }
  } else if (name == "q5_0") {
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    for (int j = 0; j < 16; ++j) {
      int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
      y[j] = double(HalfAt(b)) * (((b[6 + j] & 0xF) | h0) - 16);
      y[j + 16] = double(HalfAt(b)) * (((b[6 + j] >> 4) | h1) - 16);
    }
  } else if (name == "q4_k" || name == "q5_k") {
    const bool five = name == "q5_k";
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* q = b + (five ? 48 : 16);
    int u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32, u1 <<= 2, u2 <<= 2) {
      int sc, m;
      ScaleMinK4(is, scales, &sc, &m);
      double d1 = double(HalfAt(b)) * sc, m1 = double(HalfAt(b + 2)) * m;
      ScaleMinK4(is + 1, scales, &sc, &m);
      double d2 = double(HalfAt(b)) * sc, m2 = double(HalfAt(b + 2)) * m;
      for (int l = 0; l < 32; ++l) {
        y[j + l] = d1 * ((q[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
        y[j + 32 + l] = d2 * ((q[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
      }
    }
  } else if (name == "q6_k") {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    double d = HalfAt(b + 208);
    for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        int is = l / 16;
        int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[n + l] = d * sc[is] * q1;
        y[n + l + 32] = d * sc[is + 2] * q2;
        y[n + l + 64] = d * sc[is + 4] * q3;
        y[n + l + 96] = d * sc[is + 6] * q4;
      }
    }
  } else {
    FAIL("no reference for " << name);
  }
}

HostTensor RandomBlocks(const GgmlBlockInfo& format, int64_t n, int64_t k, unsigned seed) {
  HostTensor w;
  w.element_type = 16;  // i8
  w.dims = {n, format.RowBytes(k)};
  w.bytes.resize(n * format.RowBytes(k));
  std::mt19937 rng(seed);
  for (uint8_t& byte : w.bytes) byte = uint8_t(rng());
  std::string name = format.name;
  std::vector<int> halves = name == "q6_k" ? std::vector<int>{208} : name == "q4_1" || name == "q4_k" || name == "q5_k"
                                                                         ? std::vector<int>{0, 2}
                                                                         : std::vector<int>{0};
  std::uniform_real_distribution<float> scale(0.002f, 0.05f);
  for (int64_t at = 0; at < int64_t(w.bytes.size()); at += format.block_bytes)
    for (int offset : halves) {
      uint16_t h = FloatToHalf(offset == 2 && rng() % 2 ? -scale(rng) : scale(rng));
      w.bytes[at + offset] = uint8_t(h), w.bytes[at + offset + 1] = uint8_t(h >> 8);
    }
  return w;
}

}  // namespace hexir::e2e
