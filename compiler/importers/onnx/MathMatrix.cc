// ONNX matrix products and scans (onnx/defs/math): MatMul and Gemm as a generic with a
// reduction loop (batch broadcasting, 1-D operands), Einsum as one generic over its
// subscripts, CumSum as a masked reduction, Det as the Leibniz sum (n <= 5).
#include <algorithm>
#include <cctype>
#include <map>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// Operands of MatMul and Gemm: rank >= 1, one element type.
Status CheckProductOperands(Context& c, const Val& a, const Val& bm) {
  if (a.rank() == 0 || bm.rank() == 0) return c.Error("operands must have rank >= 1");
  if (a.et != bm.et) return c.Error("operands have different element types");
  return Status::Ok();
}

}  // namespace

Status LowerMatMul(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(1));
  HEXIR_RETURN_IF_ERROR(CheckProductOperands(c, a, bm));
  return c.SetOut(0, c.MatMul(a, bm));
}

// alpha * op(A) * op(B) + beta * C.
Status LowerGemm(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& a_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& b_in, c.In(1));
  HEXIR_RETURN_IF_ERROR(CheckProductOperands(c, a_in, b_in));
  Val a = a_in, bm = b_in;
  if (a.rank() != 2 || bm.rank() != 2) return c.Error("Gemm operands must be 2-D");
  if (c.AttrI("transA", 0)) a = c.Transpose(a, {1, 0});
  if (c.AttrI("transB", 0)) bm = c.Transpose(bm, {1, 0});
  HEXIR_ASSIGN_OR_RETURN(Val y, c.MatMul(a, bm));
  float alpha = c.AttrF("alpha", 1.0f), beta = c.AttrF("beta", 1.0f);
  std::string et = y.et;
  if (alpha != 1.0f) {
    HEXIR_ASSIGN_OR_RETURN(y, c.Elementwise({&y}, et, [&](const Args& x) {
      return b.Bin("arith.mulf", "", x[0], b.ScalarConst(et, alpha), et);
    }));
  }
  if (c.HasIn(2) && beta != 0.0f) {
    HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(2));
    HEXIR_ASSIGN_OR_RETURN(y, c.Elementwise({&y, &bias}, et, [&](const Args& x) {
      std::string v = beta == 1.0f ? x[1] : b.Bin("arith.mulf", "", x[1], b.ScalarConst(et, beta), et);
      return b.Bin("arith.addf", "", x[0], v, et);
    }));
  }
  c.SetOut(0, y);
  return Status::Ok();
}

// out[.., i, ..] = sum over k of x[.., k, ..] where k <= i (or the exclusive/reverse forms):
// loops = output dims + one reduction loop k over the axis.
Status LowerCumSum(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& axis_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> axis_value, c.ConstInts(axis_in, "axis"));
  if (axis_value.empty()) return c.Error("axis must have one element");
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(axis_value[0], x.rank()));
  bool excl = c.AttrI("exclusive", 0) != 0, rev = c.AttrI("reverse", 0) != 0;
  c.Mat(x);
  int loops = static_cast<int>(x.rank()) + 1;
  std::vector<std::string> xm, om;
  for (int i = 0; i + 1 < loops; ++i) {
    xm.push_back(i == axis ? "d" + std::to_string(loops - 1) : "d" + std::to_string(i));
    om.push_back("d" + std::to_string(i));
  }
  std::string et = x.et;
  std::vector<std::string> iters(loops - 1, "parallel");
  iters.push_back("reduction");
  std::string init = b.Filled(x.shape, et, 0);
  Val r;
  r.et = et;
  r.shape = x.shape;
  r.name = b.Generic({&x}, {Builder::Map(loops, xm)}, Builder::Map(loops, om), x.shape, et, loops,
                     iters, init, [&](const Args& a) {
                       std::string i = b.Fresh(), k = b.Fresh();
                       b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
                       b.Line(k + " = linalg.index " + std::to_string(loops - 1) + " : index");
                       std::string pred = rev ? (excl ? "sgt" : "sge") : (excl ? "slt" : "sle");
                       std::string in = b.Fresh();
                       b.Line(in + " = arith.cmpi " + pred + ", " + k + ", " + i + " : index");
                       std::string v = b.Select(in, a[0], b.ScalarConst(et, 0), et);
                       return b.Bin("arith.addf", "arith.addi", a[1], v, et);
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx

namespace hexir::importers::onnx {
namespace {

// An Einsum operand's subscripts with "..." spelled out as the trailing ones of `ellipsis`
// (upper-case letters, numpy broadcasting aligns them from the right).
StatusOr<std::string> ExpandEllipsis(Context& c, const std::string& term, int64_t rank, const std::string& ellipsis) {
  size_t dots = term.find("...");
  if (dots == std::string::npos) {
    if (static_cast<int64_t>(term.size()) != rank)
      return c.Error("subscripts '" + term + "' do not match an operand of rank " + std::to_string(rank));
    return term;
  }
  int64_t extra = rank - static_cast<int64_t>(term.size() - 3);
  if (extra < 0 || extra > static_cast<int64_t>(ellipsis.size()))
    return c.Error("subscripts '" + term + "' do not match an operand of rank " + std::to_string(rank));
  return term.substr(0, dots) + ellipsis.substr(ellipsis.size() - extra) + term.substr(dots + 3);
}

}  // namespace

// One generic over every letter: the output's letters parallel (in output order), the others
// reductions; the body multiplies the operands' elements into the accumulator. A letter
// repeated within an operand reads its diagonal; an extent-1 dim broadcasts.
Status LowerEinsum(Context& c) {
  Builder& b = c.b;
  std::string eq;
  for (char ch : c.AttrS("equation", "")) if (ch != ' ') eq += ch;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') terms.emplace_back();
    else terms.back() += ch;
  }
  if (static_cast<int>(terms.size()) != c.NumIn())
    return c.Error("equation '" + eq + "' names " + std::to_string(terms.size()) + " operands, got " + std::to_string(c.NumIn()));
  std::vector<Val*> ins;
  int64_t ellipsis_rank = 0;
  for (int i = 0; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    ins.push_back(&v);
    if (terms[i].find("...") != std::string::npos)
      ellipsis_rank = std::max(ellipsis_rank, v.rank() - static_cast<int64_t>(terms[i].size() - 3));
  }
  std::string ellipsis;
  for (int64_t k = 0; k < ellipsis_rank; ++k) ellipsis += static_cast<char>('A' + k);
  std::map<char, Dim> extent;
  std::map<char, int> uses;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i]->et != ins[0]->et) return c.Error("operands have different element types");
    HEXIR_ASSIGN_OR_RETURN(terms[i], ExpandEllipsis(c, terms[i], ins[i]->rank(), ellipsis));
    for (size_t k = 0; k < terms[i].size(); ++k) {
      char l = terms[i][k];
      if (!std::isalpha(static_cast<unsigned char>(l))) return c.Error("equation '" + eq + "' has a bad subscript");
      ++uses[l];
      const Dim& d = ins[i]->shape[k];
      auto it = extent.find(l);
      if (it == extent.end() || (!it->second.dynamic() && it->second.v == 1)) extent[l] = d;
      else if (!d.dynamic() && !it->second.dynamic() && d.v != 1 && d.v != it->second.v)
        return c.Error("subscript '" + std::string(1, l) + "' has extents " + std::to_string(it->second.v) + " and " +
                       std::to_string(d.v));
    }
  }
  std::string out_letters;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    bool dots = rhs.find("...") != std::string::npos;
    int64_t rank = static_cast<int64_t>(rhs.size()) + (dots ? ellipsis_rank - 3 : 0);
    HEXIR_ASSIGN_OR_RETURN(out_letters, ExpandEllipsis(c, rhs, rank, ellipsis));
  } else {
    out_letters = ellipsis;
    for (const auto& [l, n] : uses)
      if (n == 1 && std::islower(static_cast<unsigned char>(l))) out_letters += l;
  }
  std::string order = out_letters;
  for (const auto& [l, n] : uses)
    if (order.find(l) == std::string::npos) order += l;
  int loops = static_cast<int>(order.size());
  Shape out;
  for (char l : out_letters) {
    if (!extent.count(l)) return c.Error("output subscript '" + std::string(1, l) + "' is not an operand's");
    out.push_back(extent[l]);
  }
  std::vector<std::string> maps, iters;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::vector<std::string> r;
    for (size_t k = 0; k < terms[i].size(); ++k) {
      const Dim& d = ins[i]->shape[k];
      const Dim& e = extent[terms[i][k]];
      bool broadcast = !d.dynamic() && d.v == 1 && !(!e.dynamic() && e.v == 1);
      r.push_back(broadcast ? "0" : "d" + std::to_string(order.find(terms[i][k])));
    }
    maps.push_back(Builder::Map(loops, r));
    c.Mat(*ins[i]);
  }
  for (int k = 0; k < loops; ++k) iters.push_back(k < static_cast<int>(out_letters.size()) ? "parallel" : "reduction");
  std::string et = ins[0]->et;
  std::string init = b.Filled(out, et, 0);
  std::vector<const Val*> cins(ins.begin(), ins.end());
  Val r;
  r.et = et;
  r.shape = out;
  std::vector<std::string> out_map;
  for (size_t k = 0; k < out_letters.size(); ++k) out_map.push_back("d" + std::to_string(k));
  r.name = b.Generic(cins, maps, Builder::Map(loops, out_map), out, et, loops, iters, init, [&](const Args& a) {
                       std::string p = a[0];
                       for (size_t i = 1; i < ins.size(); ++i) p = b.Bin("arith.mulf", "arith.muli", p, a[i], et);
                       return b.Bin("arith.addf", "arith.addi", a[ins.size()], p, et);
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

// det of the trailing n x n matrices (n static, <= 5): the Leibniz sum over permutations,
// sign(p) * prod_i x[i, p(i)], one generic over the batch dims reading the n^2 elements.
Status LowerDet(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t r = x.rank();
  if (r < 2 || !x.IsFloat()) return c.Error("expected float [..., n, n] matrices");
  const Dim& rows = x.shape[r - 2];
  const Dim& cols = x.shape[r - 1];
  if (rows.dynamic() || cols.dynamic() || rows.v != cols.v) return c.Error("the matrices must be square and static");
  int n = static_cast<int>(rows.v);
  if (n > 5) return c.Error("matrices larger than 5 x 5 are not supported");
  c.Mat(x);
  std::string et = x.et;
  Shape out(x.shape.begin(), x.shape.end() - 2);
  Val res = b.Tabulate(out, et, [&](std::vector<std::string> idx) {
    std::vector<std::vector<std::string>> e(n, std::vector<std::string>(n));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        std::vector<std::string> at = idx;
        at.push_back(b.IndexConst(i));
        at.push_back(b.IndexConst(j));
        e[i][j] = b.Fresh();
        b.Line(e[i][j] + " = tensor.extract " + x.name + "[" + Builder::Join(at) + "] : " + Builder::TensorType(x));
      }
    std::vector<int> p(n);
    for (int i = 0; i < n; ++i) p[i] = i;
    std::string sum;
    do {
      int inversions = 0;
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) inversions += p[i] > p[j];
      std::string term = e[0][p[0]];
      for (int i = 1; i < n; ++i) term = b.Bin("arith.mulf", "", term, e[i][p[i]], et);
      if (sum.empty()) sum = inversions % 2 ? b.Op1("arith.negf", term, et) : term;
      else sum = b.Bin(inversions % 2 ? "arith.subf" : "arith.addf", "", sum, term, et);
    } while (std::next_permutation(p.begin(), p.end()));
    return n == 0 ? b.ScalarConst(et, 1) : sum;
  });
  c.SetOut(0, res);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
