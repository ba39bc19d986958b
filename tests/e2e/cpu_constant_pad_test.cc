// Constant pads on the CPU (passes/codegen/CPUConstantPad.h: a static pad in the ONNX
// importer's form becomes a fill of the output and a copy of the source into its interior;
// CPUDynamicPad.h: tiled ones and those of run-time extents too; tensor.pad ones keep their
// per-element generic) against a reference built element by element, at awkward shapes: odd
// and prime extents, asymmetric pads, a pad of only one side, a negative low (a crop), rows
// of 1 and 1023, a non-zero padding value, ranks 1 to 4, dynamic dims (one module at several
// sizes); on 0, 1 and 3 worker threads. The importer's own output is also checked by the node
// conformance tests (test_constant_pad, test_conv_with_strides_and_asymmetric_padding).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

struct Pad {
  std::vector<int64_t> shape, low, high;
  double value;
  bool dynamic = false;  // every dim of source and result dynamic
};

std::string TensorType(const std::vector<int64_t>& dims, bool dynamic) {
  std::string t = "tensor<";
  for (int64_t d : dims) t += (dynamic ? std::string("?") : std::to_string(d)) + "x";
  return t + "f32>";
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::vector<int64_t> PaddedShape(const Pad& p) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < p.shape.size(); ++d) out.push_back(p.low[d] + p.shape[d] + p.high[d]);
  return out;
}

std::string Value(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9e", v);
  return text;
}

// A host tensor.pad (dispatch/LowerTensorOps makes it a generic selecting its coordinates).
std::string TensorPadSource(const Pad& p) {
  std::string in = TensorType(p.shape, p.dynamic), out = TensorType(PaddedShape(p), p.dynamic);
  std::string args;
  for (size_t d = 0; d < p.shape.size(); ++d) args += "%i" + std::to_string(d) + ": index" + (d + 1 < p.shape.size() ? ", " : "");
  return "func.func @main(%x: " + in + ") -> " + out + " {\n" +
         "  %v = arith.constant " + Value(p.value) + " : f32\n" +
         "  %r = tensor.pad %x low[" + Join(p.low) + "] high[" + Join(p.high) + "] {\n" +
         "  ^bb0(" + args + "):\n" +
         "    tensor.yield %v : f32\n" +
         "  } : " + in + " to " + out + "\n" +
         "  return %r : " + out + "\n}\n";
}

// The ONNX importer's form (compiler/importers/onnx Context::Pad): a generic over the result
// reading x at min(max(i - low, 0), extent - 1) where a dim is padded, the value outside.
// Dynamic: every extent is x's `tensor.dim`, read outside the generic (as in a dynamic
// export, where they reach the kernel as arguments).
std::string ImporterPadSource(const Pad& p) {
  std::string in = TensorType(p.shape, p.dynamic), out = TensorType(PaddedShape(p), p.dynamic);
  std::string maps = "affine_map<(", iterators, body, at, valid, dims, sizes;
  if (p.dynamic)
    for (size_t d = 0; d < p.shape.size(); ++d) {
      std::string k = std::to_string(d);
      dims += "  %c" + k + " = arith.constant " + k + " : index\n" +
              "  %dim" + k + " = tensor.dim %x, %c" + k + " : " + in + "\n" +
              "  %pads" + k + " = arith.constant " + std::to_string(p.low[d] + p.high[d]) + " : index\n" +
              "  %size" + k + " = arith.addi %dim" + k + ", %pads" + k + " : index\n";
      sizes += (d ? ", %size" : "%size") + k;
    }
  for (size_t d = 0; d < p.shape.size(); ++d) {
    std::string k = std::to_string(d);
    maps += (d ? ", d" : "d") + k;
    iterators += std::string(d ? ", " : "") + "\"parallel\"";
    body += "    %i" + k + " = linalg.index " + k + " : index\n";
    if (p.low[d] == 0 && p.high[d] == 0) {
      at += (d ? ", %i" : "%i") + k;
      continue;
    }
    std::string low = std::to_string(p.low[d]), extent = std::to_string(p.shape[d]);
    std::string n = p.dynamic ? "%dim" + k : "%n" + k;
    body += "    %low" + k + " = arith.constant " + low + " : index\n" +
            (p.dynamic ? "" : "    %n" + k + " = arith.constant " + extent + " : index\n") +
            "    %s" + k + " = arith.subi %i" + k + ", %low" + k + " : index\n" +
            "    %last" + k + " = arith.subi " + n + ", %one : index\n" +
            "    %m" + k + " = arith.maxsi %s" + k + ", %zero : index\n" +
            "    %a" + k + " = arith.minsi %m" + k + ", %last" + k + " : index\n" +
            "    %ge" + k + " = arith.cmpi sge, %s" + k + ", %zero : index\n" +
            "    %lt" + k + " = arith.cmpi slt, %s" + k + ", " + n + " : index\n" +
            "    %ok" + k + " = arith.andi %ge" + k + ", %lt" + k + " : i1\n";
    if (!valid.empty()) {
      body += "    %and" + k + " = arith.andi " + valid + ", %ok" + k + " : i1\n";
      valid = "%and" + k;
    } else {
      valid = "%ok" + k;
    }
    at += (d ? ", %a" : "%a") + k;
  }
  maps += ") -> (" + maps.substr(std::string("affine_map<(").size()) + ")>";
  return "func.func @main(%x: " + in + ") -> " + out + " {\n" + dims +
         "  %e = tensor.empty(" + sizes + ") : " + out + "\n" +
         "  %r = linalg.generic {indexing_maps = [" + maps + "], iterator_types = [" + iterators +
         "]} outs(%e : " + out + ") {\n" +
         "  ^bb0(%o: f32):\n" +
         "    %zero = arith.constant 0 : index\n" +
         "    %one = arith.constant 1 : index\n" + body +
         "    %x_at = tensor.extract %x[" + at + "] : " + in + "\n" +
         "    %v = arith.constant " + Value(p.value) + " : f32\n" +
         "    %y = arith.select " + valid + ", %x_at, %v : f32\n" +
         "    linalg.yield %y : f32\n" +
         "  } -> " + out + "\n" +
         "  return %r : " + out + "\n}\n";
}

// out[i] = x[i - low] inside the source, the value elsewhere, one element at a time.
HostTensor Reference(const Pad& p, const HostTensor& x) {
  std::vector<int64_t> shape = PaddedShape(p);
  HostTensor out = ZerosF32(shape);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  const size_t rank = shape.size();
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat, source = 0, stride = 1;
    bool inside = true;
    for (size_t k = rank; k-- > 0;) {
      int64_t i = rest % shape[k] - p.low[k];
      rest /= shape[k];
      inside = inside && i >= 0 && i < p.shape[k];
      source += i * stride;
      stride *= p.shape[k];
    }
    F32(out)[flat] = inside ? F32(x)[source] : static_cast<float>(p.value);
  }
  return out;
}

void Check(const Pad& p, const std::string& name, bool importer_form = true) {
  INFO(name << ": source " << Join(p.shape) << ", low " << Join(p.low) << ", high " << Join(p.high)
            << ", value " << p.value << (p.dynamic ? " (dynamic)" : ""));
  std::string module =
      CompileOrDie(importer_form ? ImporterPadSource(p) : TensorPadSource(p), "constant_pad_" + name);
  HostTensor x = RandomF32(p.shape, 17);
  HostTensor expected = Reference(p, x);
  for (const char* threads : {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=3"}) {
    INFO(threads);
    auto out = RunOrDie(module, "main", {x}, 1, "cpu", threads);
    RequireClose(out[0], expected, 0, 0);  // a copy: exact
  }
}

TEST_CASE("static constant pads in the ONNX importer's form at awkward shapes are exact") {
  // One workgroup (an outer extent of 1): the fill and the copy.
  Check({{1, 3, 5, 37}, {0, 0, 1, 2}, {0, 0, 2, 1}, 0.0}, "nchw_asymmetric");
  Check({{1, 7, 1, 1}, {0, 0, 3, 0}, {0, 0, 0, 4}, -1.5}, "one_side_each");
  Check({{1, 1023}, {0, 1}, {0, 0}, 2.25}, "row_1023");
  Check({{1, 17, 1, 33}, {0, 0, 2, 1}, {0, 1, 0, 0}, -3.0e38}, "lowest");
  Check({{1, 5, 7, 11}, {0, 2, 3, 4}, {0, 3, 2, 1}, 0.5}, "three_dims");
  Check({{1, 13, 16, 16}, {0, 0, 1, 1}, {0, 0, 1, 1}, 0.0}, "depthwise_input");
  // Split over workgroups along a padded outer dim (a tile: codegen/CPUDynamicPad.h).
  Check({{3, 5, 7, 11}, {1, 2, 3, 4}, {4, 3, 2, 1}, 0.5}, "every_dim_tiled");
  Check({{1023}, {1}, {0}, 2.25}, "rank1_tiled");
  // A negative low crops the source.
  Check({{3, 9}, {1, -2}, {0, 1}, 0.25}, "crop");
}

// One dynamic module of `p`'s rank, lows, highs and value run at each source shape of `shapes`.
void CheckOneModuleAtSizes(Pad p, const std::string& name, std::initializer_list<std::vector<int64_t>> shapes) {
  p.dynamic = true;
  std::string module = CompileOrDie(ImporterPadSource(p), "constant_pad_" + name);
  for (const std::vector<int64_t>& shape : shapes) {
    p.shape = shape;
    INFO(name << ": source " << Join(p.shape) << ", low " << Join(p.low) << ", high " << Join(p.high)
              << ", value " << p.value << " (one dynamic module)");
    HostTensor x = RandomF32(p.shape, 19);
    HostTensor expected = Reference(p, x);
    for (const char* threads : {"--cpu-threads=0", "--cpu-threads=3"}) {
      INFO(threads);
      auto out = RunOrDie(module, "main", {x}, 1, "cpu", threads);
      RequireClose(out[0], expected, 0, 0);  // a copy: exact
    }
  }
}

TEST_CASE("dynamic constant pads in the ONNX importer's form, one module at several sizes, are exact") {
  // A convolution's input (codegen/CPUDynamicPad.h: a fill and a copy, the extents kernel
  // arguments): planes of 1 to 57, batch 1 and 3 (split over workgroups along the batch).
  CheckOneModuleAtSizes({{1, 5, 1, 1}, {0, 0, 1, 2}, {0, 0, 2, 1}, 0.0}, "dynamic_nchw",
                        {{1, 5, 1, 1}, {3, 5, 3, 7}, {1, 5, 7, 7}, {3, 5, 13, 1}, {1, 5, 57, 57}, {3, 5, 57, 13}});
  // Every dim padded, a non-zero value, a one-sided pad; the outer padded dim tiled.
  CheckOneModuleAtSizes({{1, 1, 1}, {2, 0, 3}, {1, 4, 0}, -2.5}, "dynamic_every_dim",
                        {{1, 1, 1}, {3, 7, 13}, {13, 3, 1}, {57, 1, 7}});
  // A negative low crops the source (s = i + 1).
  CheckOneModuleAtSizes({{1, 1}, {0, -1}, {0, 3}, 1.0}, "dynamic_crop", {{1, 1}, {3, 7}, {7, 1023}, {1, 2}});
}

TEST_CASE("static tensor.pad ops (LowerTensorOps' generic, left per element) are exact") {
  Check({{1, 3, 5, 37}, {0, 0, 1, 2}, {0, 0, 2, 1}, -0.75}, "tensor_pad_nchw", false);
  Check({{3, 5, 7, 11}, {1, 2, 3, 4}, {4, 3, 2, 1}, 0.5}, "tensor_pad_every_dim", false);
}

TEST_CASE("dynamic constant pads keep the per-element kernel and are exact") {
  Pad p{{2, 5, 9}, {0, 1, 2}, {1, 0, 3}, 4.0};
  p.dynamic = true;
  Check(p, "dynamic", false);
}

}  // namespace
}  // namespace hexir::e2e
