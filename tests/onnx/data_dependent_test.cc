// Data-dependent output extents beyond NonZero/Compress (compiler/importers/onnx: TensorCount.cc
// Unique, ObjectDetection.cc NonMaxSuppression) and RoiAlign: one module per graph (run at two
// input sizes where a dim is dynamic), every output compared with a reference written here in
// plain C++ (std::map / a greedy loop in onnxruntime's order / bilinear sampling).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
using ox::testing::CompileForCpu;
using ox::testing::Graph;
using ox::testing::ParseFloats;
using ox::testing::RunMainWith;

constexpr int kI64 = ::onnx::TensorProto::INT64;

std::string Build(Graph& m, const std::string& name) {
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, name);
  REQUIRE(!mod.empty());
  return mod;
}

// hexir-run's result lines ("2x3xf32=..."), one per output.
std::vector<std::string> Results(const std::string& mod, const std::vector<std::string>& inputs) {
  int code = 0;
  std::string out = RunMainWith(mod, inputs, &code);
  INFO(out);
  REQUIRE(code == 0);
  std::vector<std::string> lines;
  std::istringstream s(out);
  for (std::string line; std::getline(s, line);)
    if (line.find('=') != std::string::npos && line.find("x") != std::string::npos) lines.push_back(line);
  return lines;
}

std::string Prefix(const std::string& line) { return line.substr(0, line.find('=')); }

std::vector<int64_t> Ints(const std::string& line) {
  std::vector<int64_t> v;
  for (float f : ParseFloats(line)) v.push_back(static_cast<int64_t>(f));
  return v;
}

std::string Spec(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  std::string s;
  for (int64_t d : dims) s += std::to_string(d) + "x";
  s += "f32=";
  for (float v : values) {
    std::ostringstream o;
    o << v << " ";
    s += o.str();
  }
  return s;
}

struct UniqueRef {
  std::vector<float> y;
  std::vector<int64_t> indices, inverse, counts;
};

// numpy.unique(x, return_index, return_inverse, return_counts); `sorted` false keeps the
// order of first occurrence, as ONNX's sorted=0.
UniqueRef Unique(const std::vector<float>& x, bool sorted) {
  std::vector<float> order;
  std::map<float, int64_t> first, count;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!first.count(x[i])) {
      first[x[i]] = static_cast<int64_t>(i);
      order.push_back(x[i]);
    }
    ++count[x[i]];
  }
  if (sorted) std::sort(order.begin(), order.end());
  UniqueRef r;
  std::map<float, int64_t> slot;
  for (float v : order) {
    slot[v] = static_cast<int64_t>(r.y.size());
    r.y.push_back(v);
    r.indices.push_back(first[v]);
    r.counts.push_back(count[v]);
  }
  for (float v : x) r.inverse.push_back(slot[v]);
  return r;
}

}  // namespace

TEST_CASE("Unique returns the distinct values, first indices, inverse and counts, sorted or in first-seen order") {
  for (int sorted : {1, 0}) {
    Graph m;
    m.model.mutable_opset_import(0)->set_version(11);
    m.Input("x", {-1});
    m.Output("y", {-1});
    m.Output("indices", {-1}, kI64);
    m.Output("inverse", {-1}, kI64);
    m.Output("counts", {-1}, kI64);
    auto* n = m.Node("Unique", {"x"}, {"y", "indices", "inverse", "counts"});
    Graph::AttrI(n, "sorted", sorted);
    std::string mod = Build(m, "unique_" + std::to_string(sorted));
    std::mt19937 rng(7 + sorted);
    for (int len : {9, 23}) {
      std::vector<float> x;
      for (int i = 0; i < len; ++i) x.push_back(static_cast<float>(static_cast<int>(rng() % 7) - 3));
      UniqueRef want = Unique(x, sorted != 0);
      std::vector<std::string> got = Results(mod, {Spec({len}, x)});
      REQUIRE(got.size() == 4);
      INFO("sorted=" << sorted << " len=" << len);
      CHECK(ParseFloats(got[0]) == want.y);
      CHECK(Ints(got[1]) == want.indices);
      CHECK(Ints(got[2]) == want.inverse);
      CHECK(Ints(got[3]) == want.counts);
    }
  }
}

TEST_CASE("Unique along an axis keeps the distinct columns in lexicographic order") {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(11);
  m.Input("x", {2, -1});
  m.Output("y", {2, -1});
  m.Output("indices", {-1}, kI64);
  m.Output("inverse", {-1}, kI64);
  m.Output("counts", {-1}, kI64);
  auto* n = m.Node("Unique", {"x"}, {"y", "indices", "inverse", "counts"});
  Graph::AttrI(n, "axis", 1);
  std::string mod = Build(m, "unique_axis");
  // columns: (1,2) (0,5) (1,2) (1,0) (0,5): distinct sorted (0,5) (1,0) (1,2)
  std::vector<std::string> got = Results(mod, {Spec({2, 5}, {1, 0, 1, 1, 0, 2, 5, 2, 0, 5})});
  REQUIRE(got.size() == 4);
  CHECK(Prefix(got[0]) == "2x3xf32");
  CHECK(ParseFloats(got[0]) == std::vector<float>{0, 1, 1, 5, 0, 2});
  CHECK(Ints(got[1]) == std::vector<int64_t>{1, 3, 0});
  CHECK(Ints(got[2]) == std::vector<int64_t>{2, 0, 2, 1, 0});
  CHECK(Ints(got[3]) == std::vector<int64_t>{2, 1, 2});
}

namespace {

struct Box {
  float y1, x1, y2, x2;
};

// onnxruntime's SuppressByIOU: no overlap for an empty intersection or a box of no area.
bool Overlaps(const Box& a, const Box& b, float threshold) {
  float ay0 = std::min(a.y1, a.y2), ay1 = std::max(a.y1, a.y2), ax0 = std::min(a.x1, a.x2), ax1 = std::max(a.x1, a.x2);
  float by0 = std::min(b.y1, b.y2), by1 = std::max(b.y1, b.y2), bx0 = std::min(b.x1, b.x2), bx1 = std::max(b.x1, b.x2);
  float ih = std::min(ay1, by1) - std::max(ay0, by0), iw = std::min(ax1, bx1) - std::max(ax0, bx0);
  if (ih <= 0 || iw <= 0) return false;
  float inter = ih * iw, area_a = (ay1 - ay0) * (ax1 - ax0), area_b = (by1 - by0) * (bx1 - bx0);
  if (area_a <= 0 || area_b <= 0) return false;
  float uni = area_a + area_b - inter;
  return uni > 0 && inter / uni > threshold;
}

// Rows (batch, class, box) in onnxruntime's order.
std::vector<int64_t> GreedyNms(const std::vector<float>& boxes, const std::vector<float>& scores, int64_t batches,
                               int64_t classes, int64_t n, int64_t max_out, float iou, float score_min) {
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = &scores[(b * classes + c) * n];
      std::vector<int64_t> idx(n);
      for (int64_t i = 0; i < n; ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      std::vector<int64_t> kept;
      for (int64_t i : idx) {
        if (static_cast<int64_t>(kept.size()) >= max_out || !(s[i] > score_min)) continue;
        const float* bi = &boxes[(b * n + i) * 4];
        bool suppressed = false;
        for (int64_t k : kept) {
          const float* bk = &boxes[(b * n + k) * 4];
          suppressed = suppressed || Overlaps({bi[0], bi[1], bi[2], bi[3]}, {bk[0], bk[1], bk[2], bk[3]}, iou);
        }
        if (suppressed) continue;
        kept.push_back(i);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  return rows;
}

}  // namespace

TEST_CASE("NonMaxSuppression over a run-time box count matches a greedy reference") {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(11);
  m.Input("boxes", {2, -1, 4});
  m.Input("scores", {2, 3, -1});
  m.InitI("max", {3});
  m.InitF("iou", {1}, {0.3f});
  m.InitF("score_min", {1}, {0.2f});
  m.Output("selected", {-1, 3}, kI64);
  m.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score_min"}, {"selected"});
  std::string mod = Build(m, "nms_runtime");
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> pos(0, 10), size(0.5f, 4), score(0, 1);
  for (int n : {6, 17}) {
    std::vector<float> boxes, scores;
    for (int i = 0; i < 2 * n; ++i) {  // corners given in either order
      float y = pos(rng), x = pos(rng), h = size(rng), w = size(rng);
      if (i % 3 == 0) boxes.insert(boxes.end(), {y + h, x + w, y, x});
      else boxes.insert(boxes.end(), {y, x, y + h, x + w});
    }
    for (int i = 0; i < 2 * 3 * n; ++i) scores.push_back(score(rng));
    std::vector<int64_t> want = GreedyNms(boxes, scores, 2, 3, n, 3, 0.3f, 0.2f);
    std::vector<std::string> got = Results(mod, {Spec({2, n, 4}, boxes), Spec({2, 3, n}, scores)});
    REQUIRE(got.size() == 1);
    INFO("n=" << n << " got " << got[0]);
    CHECK(Prefix(got[0]) == std::to_string(want.size() / 3) + "x3xi64");
    CHECK(Ints(got[0]) == want);
  }
}

TEST_CASE("NonMaxSuppression without max_output_boxes_per_class selects nothing") {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(11);
  m.Input("boxes", {1, 2, 4});
  m.Input("scores", {1, 1, 2});
  m.Output("selected", {-1, 3}, kI64);
  m.Node("NonMaxSuppression", {"boxes", "scores"}, {"selected"});
  std::string mod = Build(m, "nms_default_max");
  std::vector<std::string> got = Results(mod, {Spec({1, 2, 4}, {0, 0, 1, 1, 5, 5, 6, 6}), Spec({1, 1, 2}, {0.9f, 0.8f})});
  REQUIRE(got.size() == 1);
  CHECK(Prefix(got[0]) == "0x3xi64");
}

namespace {

// RoiAlign's average of sampling_ratio^2 bilinear samples per bin, written from onnxruntime's
// description (half_pixel: the roi shifted by -0.5; a point beyond [-1, extent] reads 0).
float RoiAlignAt(const std::vector<float>& x, int64_t H, int64_t W, const float* roi, int64_t oh, int64_t ow, int64_t ph,
                 int64_t pw, int64_t grid, float scale) {
  float y0 = roi[1] * scale - 0.5f, x0 = roi[0] * scale - 0.5f;
  float bh = (roi[3] * scale - 0.5f - y0) / oh, bw = (roi[2] * scale - 0.5f - x0) / ow;
  float sum = 0;
  for (int64_t iy = 0; iy < grid; ++iy)
    for (int64_t ix = 0; ix < grid; ++ix) {
      float y = y0 + ph * bh + (iy + 0.5f) * bh / grid, xx = x0 + pw * bw + (ix + 0.5f) * bw / grid;
      if (y < -1 || y > H || xx < -1 || xx > W) continue;
      y = std::max(y, 0.0f);
      xx = std::max(xx, 0.0f);
      int64_t yl = std::min<int64_t>(static_cast<int64_t>(y), H - 1), xl = std::min<int64_t>(static_cast<int64_t>(xx), W - 1);
      int64_t yh = std::min<int64_t>(yl + 1, H - 1), xh = std::min<int64_t>(xl + 1, W - 1);
      if (yl == H - 1) y = static_cast<float>(yl);
      if (xl == W - 1) xx = static_cast<float>(xl);
      float ly = y - yl, lx = xx - xl;
      sum += (1 - ly) * (1 - lx) * x[yl * W + xl] + (1 - ly) * lx * x[yl * W + xh] + ly * (1 - lx) * x[yh * W + xl] +
             ly * lx * x[yh * W + xh];
    }
  return sum / static_cast<float>(grid * grid);
}

}  // namespace

TEST_CASE("RoiAlign averages bilinear samples per bin, rois partly outside the image included") {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(16);
  m.Input("x", {1, 1, 6, 7});
  m.Input("rois", {3, 4});
  m.InitI("batch", {0, 0, 0});
  m.Output("y", {3, 1, 2, 3});
  auto* n = m.Node("RoiAlign", {"x", "rois", "batch"}, {"y"});
  Graph::AttrI(n, "output_height", 2);
  Graph::AttrI(n, "output_width", 3);
  Graph::AttrI(n, "sampling_ratio", 2);
  auto* scale = n->add_attribute();
  scale->set_name("spatial_scale");
  scale->set_type(::onnx::AttributeProto::FLOAT);
  scale->set_f(0.5f);
  std::string mod = Build(m, "roialign");
  std::vector<float> x;
  for (int i = 0; i < 42; ++i) x.push_back(static_cast<float>((i * 37) % 11) - 4.5f);
  std::vector<float> rois = {0, 0, 12, 10, 3.5f, 2, 9, 7.5f, -4, 8, 16, 14};  // (x1, y1, x2, y2) in 2x pixels
  std::vector<std::string> got = Results(mod, {Spec({1, 1, 6, 7}, x), Spec({3, 4}, rois)});
  REQUIRE(got.size() == 1);
  std::vector<float> y = ParseFloats(got[0]);
  REQUIRE(y.size() == 18);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t ph = 0; ph < 2; ++ph)
      for (int64_t pw = 0; pw < 3; ++pw) {
        float want = RoiAlignAt(x, 6, 7, &rois[r * 4], 2, 3, ph, pw, 2, 0.5f);
        INFO("roi " << r << " bin " << ph << "," << pw);
        CHECK(y[(r * 2 + ph) * 3 + pw] == Approx(want).margin(1e-5));
      }
}
