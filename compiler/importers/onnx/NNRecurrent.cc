// ONNX recurrent layers (onnx/defs/rnn): RNN, GRU, LSTM, forward / reverse / bidirectional,
// with sequence_lens, initial states, peepholes, clip, activations (and their alpha/beta).
// Per direction: X @ W^T + biases for every step at once (one matmul before the loop), then an
// scf.for over the steps carries H (and C for LSTM) and the [seq, batch, hidden] outputs:
// each step adds H @ R^T and applies the gate formulas in index generics over [batch, hidden]
// that read the gates with tensor.extract. A batch entry past its sequence length keeps its
// state and writes zeros. The reverse direction walks each batch entry from its own last step
// and its outputs are put back in time order after the loop.
#include <cmath>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

// f(x) of one ONNX RNN activation on f32/f64 x.
std::string Activate(Builder& b, const Activation& a, const std::string& x, const std::string& et) {
  auto k = [&](double v) { return b.ScalarConst(et, v); };
  auto bin = [&](const char* op, const std::string& l, const std::string& r) { return b.Bin(op, "", l, r, et); };
  const std::string& n = a.name;
  if (n == "Sigmoid") return Sigmoid(b, x, et);
  if (n == "Tanh") return b.Op1("math.tanh", x, et);
  if (n == "Relu") return bin("arith.maximumf", x, k(0));
  if (n == "Affine") return bin("arith.addf", bin("arith.mulf", k(a.alpha), x), k(a.beta));
  if (n == "LeakyRelu") return b.Select(b.Cmp("olt", "", x, k(0), et), bin("arith.mulf", k(a.alpha), x), x, et);
  if (n == "ThresholdedRelu") return b.Select(b.Cmp("ogt", "", x, k(a.alpha), et), x, k(0), et);
  if (n == "ScaledTanh") return bin("arith.mulf", k(a.alpha), b.Op1("math.tanh", bin("arith.mulf", k(a.beta), x), et));
  if (n == "HardSigmoid")
    return Clamp(b, bin("arith.addf", bin("arith.mulf", k(a.alpha), x), k(a.beta)), k(0), k(1), et);
  if (n == "Elu") {
    std::string e = bin("arith.mulf", k(a.alpha), bin("arith.subf", b.Op1("math.exp", x, et), k(1)));
    return b.Select(b.Cmp("olt", "", x, k(0), et), e, x, et);
  }
  if (n == "Softsign") return bin("arith.divf", x, bin("arith.addf", k(1), b.Op1("math.absf", x, et)));
  // Softplus
  return b.Op1("math.log", bin("arith.addf", k(1), b.Op1("math.exp", x, et)), et);
}

// Default alpha/beta of activations that take them (ONNX's RNN defaults).
Activation MakeActivation(const std::string& name, bool has_alpha, double alpha, bool has_beta, double beta) {
  Activation a{name, 0, 0};
  if (name == "LeakyRelu") a.alpha = 0.01;
  if (name == "ThresholdedRelu" || name == "Elu") a.alpha = 1.0;
  if (name == "HardSigmoid") { a.alpha = 0.2; a.beta = 0.5; }
  if (name == "Affine" || name == "ScaledTanh") { a.alpha = 1.0; a.beta = 0.0; }
  if (has_alpha) a.alpha = alpha;
  if (has_beta) a.beta = beta;
  return a;
}

bool KnownActivation(const std::string& n) {
  static const char* const kNames[] = {"Affine", "Elu", "HardSigmoid", "LeakyRelu", "Relu", "ScaledTanh",
                                       "Sigmoid", "Softplus", "Softsign", "Tanh", "ThresholdedRelu"};
  for (const char* k : kNames)
    if (n == k) return true;
  return false;
}

// v[d, ...] (rank - 1), read with tensor.extract.
Val Part(Context& c, Val& v, int64_t d) {
  Builder& b = c.b;
  c.Mat(v);
  Shape s(v.shape.begin() + 1, v.shape.end());
  Val r;
  r.et = v.et;
  r.shape = s;
  r.name = b.IndexGeneric(s, v.et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(static_cast<int>(s.size()));
    idx.insert(idx.begin(), b.IndexConst(d));
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + v.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(v));
    return e;
  });
  return r;
}

std::string Extract(Builder& b, const Val& v, const std::vector<std::string>& idx) {
  std::string e = b.Fresh();
  b.Line(e + " = tensor.extract " + v.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(v));
  return e;
}

struct Layer {
  Cell cell;
  int gates;  // 1, 3, 4
  int64_t hidden;
  std::string et;
  Dim seq, batch;
  double clip = 0;
  bool input_forget = false, linear_before_reset = false;
  Val* lens = nullptr;  // [batch] i32, or null
};

// The batch entry's length (index) or the sequence length.
std::string LengthOf(Builder& b, const Layer& L, const std::string& batch_index) {
  if (!L.lens) return b.DimValue(L.seq);
  std::string l = Extract(b, *L.lens, {batch_index}), li = b.Fresh();
  b.Line(li + " = arith.index_cast " + l + " : " + L.lens->et + " to index");
  return li;
}

struct DirectionResult {
  Val y, h, c;  // y: [seq, batch, hidden] in time order
};

// xw[t] = x[t] @ w^T + Wb (+ Rb, except GRU's h gate: Rbh is applied inside the gate), for
// every step at once: [seq, batch, G*H], materialized.
StatusOr<Val> InputProjection(Context& c, const Layer& L, Val& x, Val& w, Val* bias) {
  Builder& b = c.b;
  const std::string& et = L.et;
  int64_t H = L.hidden, GH = L.gates * H;
  Val wt = c.Transpose(w, {1, 0});
  HEXIR_ASSIGN_OR_RETURN(Val xw, c.MatMul(x, wt));
  if (bias) {
    c.Mat(*bias);
    int64_t rb_limit = L.cell == Cell::kGru ? 2 * H : GH;
    Val bv;
    bv.et = et;
    bv.shape = {Dim::Static(GH)};
    bv.name = b.IndexGeneric(bv.shape, et, [&](const Args&) {
      std::string j = b.LoopIndices(1)[0], jr = b.Fresh();
      b.Line(jr + " = arith.addi " + j + ", " + b.IndexConst(GH) + " : index");
      std::string wb = Extract(b, *bias, {j});
      std::string inr = b.Fresh();
      b.Line(inr + " = arith.cmpi slt, " + j + ", " + b.IndexConst(rb_limit) + " : index");
      std::string rb = b.Select(inr, Extract(b, *bias, {jr}), b.ScalarConst(et, 0), et);
      return b.Bin("arith.addf", "", wb, rb, et);
    });
    HEXIR_ASSIGN_OR_RETURN(xw, c.Elementwise({&xw, &bv}, et, [&](const Args& a) {
      return b.Bin("arith.addf", "", a[0], a[1], et);
    }));
  }
  c.Mat(xw);
  return xw;
}

// A reverse direction's outputs `ys` (row s: step s in processing order) back in time order:
// y[s, b] = ys[len_b - 1 - s, b] for s < len_b, else 0.
Val ToTimeOrder(Builder& b, const Layer& L, const Val& ys) {
  const std::string& et = L.et;
  Val y = ys;
  y.name = b.IndexGeneric(ys.shape, et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(3);
    std::string len = LengthOf(b, L, idx[1]);
    std::string l1 = b.Fresh(), rr = b.Fresh(), cl = b.Fresh(), valid = b.Fresh();
    b.Line(l1 + " = arith.subi " + len + ", " + b.IndexConst(1) + " : index");
    b.Line(rr + " = arith.subi " + l1 + ", " + idx[0] + " : index");
    b.Line(cl + " = arith.maxsi " + rr + ", " + b.IndexConst(0) + " : index");
    b.Line(valid + " = arith.cmpi slt, " + idx[0] + ", " + len + " : index");
    std::string v = Extract(b, ys, {cl, idx[1], idx[2]});
    return b.Select(valid, v, b.ScalarConst(et, 0), et);
  });
  return y;
}

// The body of one direction's step loop: the step's values and the helpers its cells share.
struct StepBody {
  Context& c;
  Builder& b;
  const Layer& L;
  int64_t H, GH;
  const std::string& iv;  // the step index
  bool reverse;
  const std::vector<Activation>& acts;
  Val* bias;        // [2*G*H] or null
  Val* peep;        // [3H] or null
  const Val& rt;    // r^T [H, G*H]
  const Val& hv;    // h [batch, H]
  const Val& cv;    // c [batch, H] (LSTM)
  Val xt, hr;       // xw[step] and h @ r^T, [batch, G*H]

  const std::string& et() const { return L.et; }
  // valid(batch entry) = t < length; the step's row: t, or length - 1 - t reversed (>= 0).
  std::string StepOf(const std::string& bi, std::string* valid) {
    std::string len = LengthOf(b, L, bi);
    *valid = b.Fresh();
    b.Line(*valid + " = arith.cmpi slt, " + iv + ", " + len + " : index");
    if (!reverse) return iv;
    std::string l1 = b.Fresh(), rr = b.Fresh(), cl = b.Fresh();
    b.Line(l1 + " = arith.subi " + len + ", " + b.IndexConst(1) + " : index");
    b.Line(rr + " = arith.subi " + l1 + ", " + iv + " : index");
    b.Line(cl + " = arith.maxsi " + rr + ", " + b.IndexConst(0) + " : index");
    return cl;
  }
  std::string Clip(const std::string& v) {
    if (L.clip <= 0) return v;
    return Clamp(b, v, b.ScalarConst(et(), -L.clip), b.ScalarConst(et(), L.clip), et());
  }
  // Gate k's pre-activation: xw[step] (+ h @ r^T for all but GRU's h gate).
  std::string Gate(const std::vector<std::string>& bj, int k, bool with_hr) {
    std::string col = b.Fresh();
    b.Line(col + " = arith.addi " + bj[1] + ", " + b.IndexConst(k * H) + " : index");
    std::string g = Extract(b, xt, {bj[0], col});
    if (with_hr) g = b.Bin("arith.addf", "", g, Extract(b, hr, {bj[0], col}), et());
    return g;
  }
  std::string Bin(const char* op, const std::string& l, const std::string& rgt) { return b.Bin(op, "", l, rgt, et()); }
  // masked(new, old): the state kept past a batch entry's length
  std::string Masked(const std::vector<std::string>& bj, const std::string& nv, const std::string& old) {
    if (!L.lens) return nv;
    std::string valid;
    StepOf(bj[0], &valid);
    return b.Select(valid, nv, old, et());
  }
  Shape State() const { return {L.batch, Dim::Static(H)}; }
};

// xw[step]: [batch, G*H].
Val StepInput(StepBody& s, const Val& xw) {
  Builder& b = s.b;
  Val xt;
  xt.et = s.et();
  xt.shape = {s.L.batch, Dim::Static(s.GH)};
  xt.name = b.IndexGeneric(xt.shape, s.et(), [&](const Args&) {
    std::vector<std::string> bj = b.LoopIndices(2);
    std::string valid;
    std::string row = s.StepOf(bj[0], &valid);
    return Extract(b, xw, {row, bj[0], bj[1]});
  });
  return xt;
}

// RNN: h' = f(xw + h R^T).
std::string RnnState(StepBody& s) {
  Builder& b = s.b;
  return b.IndexGeneric(s.State(), s.et(), [&](const Args&) {
    std::vector<std::string> bj = b.LoopIndices(2);
    std::string v = Activate(b, s.acts[0], s.Clip(s.Gate(bj, 0, true)), s.et());
    return s.Masked(bj, v, Extract(b, s.hv, bj));
  });
}

// GRU: z = f(xz + hRz), r = f(xr + hRr); h~ = g(xh + r (hRh + Rbh)) when linear_before_reset,
// else g(xh + (r h) Rh + Rbh); h' = (1 - z) h~ + z h.
StatusOr<std::string> GruState(StepBody& s) {
  Builder& b = s.b;
  const std::string& et = s.et();
  const int64_t H = s.H;
  Val rh = s.hv;  // r * h, for linear_before_reset = 0
  Val rht;
  if (!s.L.linear_before_reset) {
    rh.name = b.IndexGeneric(s.State(), et, [&](const Args&) {
      std::vector<std::string> bj = b.LoopIndices(2);
      std::string rg = Activate(b, s.acts[0], s.Clip(s.Gate(bj, 1, true)), et);
      return s.Bin("arith.mulf", rg, Extract(b, s.hv, bj));
    });
    // rows 2H..3H of r^T's columns: (r h) @ Rh^T
    Val rt_h;
    rt_h.et = et;
    rt_h.shape = {Dim::Static(H), Dim::Static(H)};
    rt_h.name = b.IndexGeneric(rt_h.shape, et, [&](const Args&) {
      std::vector<std::string> ij = b.LoopIndices(2);
      std::string col = b.Fresh();
      b.Line(col + " = arith.addi " + ij[1] + ", " + b.IndexConst(2 * H) + " : index");
      return Extract(b, s.rt, {ij[0], col});
    });
    HEXIR_ASSIGN_OR_RETURN(rht, s.c.MatMul(rh, rt_h));
    s.c.Mat(rht);
  }
  return b.IndexGeneric(s.State(), et, [&](const Args&) {
    std::vector<std::string> bj = b.LoopIndices(2);
    std::string z = Activate(b, s.acts[0], s.Clip(s.Gate(bj, 0, true)), et);
    std::string rbh = b.ScalarConst(et, 0);
    if (s.bias) {
      std::string col = b.Fresh();
      b.Line(col + " = arith.addi " + bj[1] + ", " + b.IndexConst(s.GH + 2 * H) + " : index");
      rbh = Extract(b, *s.bias, {col});
    }
    std::string pre;
    if (s.L.linear_before_reset) {
      std::string rg = Activate(b, s.acts[0], s.Clip(s.Gate(bj, 1, true)), et);
      std::string col = b.Fresh();
      b.Line(col + " = arith.addi " + bj[1] + ", " + b.IndexConst(2 * H) + " : index");
      std::string hrh = s.Bin("arith.addf", Extract(b, s.hr, {bj[0], col}), rbh);
      pre = s.Bin("arith.addf", s.Gate(bj, 2, false), s.Bin("arith.mulf", rg, hrh));
    } else {
      pre = s.Bin("arith.addf", s.Gate(bj, 2, false), s.Bin("arith.addf", Extract(b, rht, bj), rbh));
    }
    std::string ht = Activate(b, s.acts[1], s.Clip(pre), et);
    std::string hp = Extract(b, s.hv, bj);
    std::string one_minus = s.Bin("arith.subf", b.ScalarConst(et, 1), z);
    std::string v = s.Bin("arith.addf", s.Bin("arith.mulf", one_minus, ht), s.Bin("arith.mulf", z, hp));
    return s.Masked(bj, v, hp);
  });
}

// LSTM, gates i o f c: i = f(xi + hRi + Pi c), f = f(xf + hRf + Pf c), c' = f c + i g(xc + hRc),
// o = f(xo + hRo + Po c'), h' = o h(c'). Sets the names of `cn` (c') and `hn` (h').
void LstmState(StepBody& s, Val& cn, Val& hn) {
  Builder& b = s.b;
  const std::string& et = s.et();
  auto peep_term = [&](const std::vector<std::string>& bj, int k, const std::string& cell) {
    if (!s.peep) return std::string();
    std::string col = b.Fresh();
    b.Line(col + " = arith.addi " + bj[1] + ", " + b.IndexConst(k * s.H) + " : index");
    return s.Bin("arith.mulf", Extract(b, *s.peep, {col}), cell);
  };
  auto with = [&](const std::string& g, const std::string& p) { return p.empty() ? g : s.Bin("arith.addf", g, p); };
  cn.name = b.IndexGeneric(s.State(), et, [&](const Args&) {
    std::vector<std::string> bj = b.LoopIndices(2);
    std::string cp = Extract(b, s.cv, bj);
    std::string i = Activate(b, s.acts[0], s.Clip(with(s.Gate(bj, 0, true), peep_term(bj, 0, cp))), et);
    std::string f = s.L.input_forget
                        ? s.Bin("arith.subf", b.ScalarConst(et, 1), i)
                        : Activate(b, s.acts[0], s.Clip(with(s.Gate(bj, 2, true), peep_term(bj, 2, cp))), et);
    std::string g = Activate(b, s.acts[1], s.Clip(s.Gate(bj, 3, true)), et);
    std::string v = s.Bin("arith.addf", s.Bin("arith.mulf", f, cp), s.Bin("arith.mulf", i, g));
    return s.Masked(bj, v, cp);
  });
  hn.name = b.IndexGeneric(s.State(), et, [&](const Args&) {
    std::vector<std::string> bj = b.LoopIndices(2);
    std::string cnew = Extract(b, cn, bj);
    std::string o = Activate(b, s.acts[0], s.Clip(with(s.Gate(bj, 1, true), peep_term(bj, 1, cnew))), et);
    std::string v = s.Bin("arith.mulf", o, Activate(b, s.acts[2], cnew, et));
    return s.Masked(bj, v, Extract(b, s.hv, bj));
  });
}

// The outputs so far `yv` with row `iv` set: y[t] = h' where valid, else 0 (row t in
// processing order).
std::string StepOutputs(StepBody& s, const Val& yv, const Val& hn) {
  Builder& b = s.b;
  return b.IndexGeneric(yv.shape, s.et(), [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(3);
    std::string here = b.Fresh();
    b.Line(here + " = arith.cmpi eq, " + idx[0] + ", " + s.iv + " : index");
    std::string v = Extract(b, hn, {idx[1], idx[2]});
    if (s.L.lens) {
      std::string valid;
      s.StepOf(idx[1], &valid);
      v = b.Select(valid, v, b.ScalarConst(s.et(), 0), s.et());
    }
    return b.Select(here, v, Extract(b, yv, idx), s.et());
  });
}

// One direction: x [seq, batch, input], w [G*H, input], r [G*H, H], bias [2*G*H] (or null),
// h0 / c0 [batch, H], peep [3H] (or null); acts in the order f, g, h. An scf.for over the
// steps carries h (and c) and the outputs y.
StatusOr<DirectionResult> RunDirection(Context& c, const Layer& L, Val& x, Val& w, Val& r, Val* bias, Val& h0,
                                       Val* c0, Val* peep, bool reverse, const std::vector<Activation>& acts) {
  Builder& b = c.b;
  const std::string& et = L.et;
  int64_t H = L.hidden, GH = L.gates * H;
  HEXIR_ASSIGN_OR_RETURN(Val xw, InputProjection(c, L, x, w, bias));
  Val rt = c.Transpose(r, {1, 0});  // [H, G*H]
  c.Mat(rt);
  c.Mat(h0);
  if (c0) c.Mat(*c0);
  if (peep) c.Mat(*peep);
  Shape state = {L.batch, Dim::Static(H)};
  Val acc;
  acc.et = et;
  acc.shape = {L.seq, L.batch, Dim::Static(H)};
  std::string acc0 = b.Empty(acc.shape, et);
  std::string st = Builder::TensorType(state, et), at = Builder::TensorType(acc);
  bool lstm = L.cell == Cell::kLstm;
  std::string iv = b.Fresh(), ha = b.Fresh(), ca = b.Fresh(), ya = b.Fresh(), res = b.Fresh();
  std::string last = b.DimValue(b.Sub(L.seq, Dim::Static(1)));
  std::string bindings = ha + " = " + h0.name + ", " + (lstm ? ca + " = " + c0->name + ", " : "") + ya + " = " + acc0;
  std::string types = st + ", " + (lstm ? st + ", " : "") + at;
  b.Line(res + ":" + (lstm ? "3" : "2") + " = scf.for " + iv + " = " + b.IndexConst(0) + " to " +
         b.DimValue(L.seq) + " step " + b.IndexConst(1) + " iter_args(" + bindings + ") -> (" + types + ") {");
  b.EnterRegion();
  Val hv;
  hv.et = et;
  hv.shape = state;
  hv.name = ha;
  Val cv = hv;
  cv.name = ca;
  Val yv = acc;
  yv.name = ya;
  StepBody step{c, b, L, H, GH, iv, reverse, acts, bias, peep, rt, hv, cv, Val(), Val()};
  step.xt = StepInput(step, xw);
  HEXIR_ASSIGN_OR_RETURN(step.hr, c.MatMul(hv, rt));  // [batch, G*H]
  c.Mat(step.hr);
  Val hn;
  hn.et = et;
  hn.shape = state;
  Val cn = hn;
  if (L.cell == Cell::kRnn) {
    hn.name = RnnState(step);
  } else if (L.cell == Cell::kGru) {
    HEXIR_ASSIGN_OR_RETURN(hn.name, GruState(step));
  } else {
    LstmState(step, cn, hn);
  }
  std::string ynext = StepOutputs(step, yv, hn);
  b.Line("  scf.yield " + hn.name + ", " + (lstm ? cn.name + ", " : "") + ynext + " : " + types);
  b.ExitRegion();
  b.Line("}");
  DirectionResult out;
  out.h = hv;
  out.h.name = res + "#0";
  if (lstm) {
    out.c = hv;
    out.c.name = res + "#1";
  }
  Val ys = acc;
  ys.name = res + "#" + (lstm ? "2" : "1");
  if (!reverse) {
    out.y = ys;
    return out;
  }
  out.y = ToTimeOrder(b, L, ys);
  return out;
}

// Stacks per-direction values [rest...] into [dirs, rest...] inserted at `axis`.
Val StackDirections(Context& c, std::vector<Val>& parts, int64_t axis) {
  Builder& b = c.b;
  if (parts.size() == 1) {
    Shape s = parts[0].shape;
    s.insert(s.begin() + axis, Dim::Static(1));
    auto r = c.ReshapeTo(parts[0], s);
    return r.ok() ? *r : parts[0];
  }
  for (Val& p : parts) c.Mat(p);
  Shape s = parts[0].shape;
  s.insert(s.begin() + axis, Dim::Static(static_cast<int64_t>(parts.size())));
  Val r;
  r.et = parts[0].et;
  r.shape = s;
  r.name = b.IndexGeneric(s, r.et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(static_cast<int>(s.size()));
    std::string d = idx[axis];
    idx.erase(idx.begin() + axis);
    std::string first = Extract(b, parts[0], idx), second = Extract(b, parts[1], idx), is0 = b.Fresh();
    b.Line(is0 + " = arith.cmpi eq, " + d + ", " + b.IndexConst(0) + " : index");
    return b.Select(is0, first, second, r.et);
  });
  return r;
}

Status LowerRecurrent(Context& c, Cell cell) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& w, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& r, c.In(2));
  if (!x_in.IsFloat() || x_in.et == "f16" || x_in.et == "bf16")
    return c.Error("element type " + x_in.et + " is not supported");
  if (x_in.rank() != 3 || w.rank() != 3 || r.rank() != 3) return c.Error("X, W and R must be 3-D");
  Layer L;
  L.cell = cell;
  L.gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  L.et = x_in.et;
  if (r.shape[2].dynamic()) return c.Error("R must have a static hidden size");
  L.hidden = c.AttrI("hidden_size", r.shape[2].v);
  L.clip = c.AttrF("clip", 0);
  L.input_forget = c.AttrI("input_forget", 0) != 0;
  L.linear_before_reset = c.AttrI("linear_before_reset", 0) != 0;
  int64_t layout = c.AttrI("layout", 0);
  std::string direction = c.AttrS("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return c.Error("direction '" + direction + "' is not supported");
  int dirs = direction == "bidirectional" ? 2 : 1;
  Val x = layout ? c.Transpose(x_in, {1, 0, 2}) : x_in;
  L.seq = x.shape[0];
  L.batch = x.shape[1];
  // activations: f g h per direction (RNN: f; GRU: f g)
  int per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  std::vector<std::string> names;
  for (const auto& attr : c.node->attribute())
    if (attr.name() == "activations")
      for (const std::string& s : attr.strings()) names.push_back(s);
  static const char* const kDefaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  if (names.empty())
    for (int d = 0; d < dirs; ++d)
      for (int k = 0; k < per_dir; ++k) names.push_back(kDefaults[per_dir - 1][k]);
  if (static_cast<int>(names.size()) != per_dir * dirs)
    return c.Error("expected " + std::to_string(per_dir * dirs) + " activations");
  std::vector<float> alphas = c.AttrFloats("activation_alpha"), betas = c.AttrFloats("activation_beta");
  std::vector<Activation> acts;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!KnownActivation(names[i])) return c.Error("activation '" + names[i] + "' is not supported");
    acts.push_back(MakeActivation(names[i], i < alphas.size(), i < alphas.size() ? alphas[i] : 0,
                                  i < betas.size(), i < betas.size() ? betas[i] : 0));
  }
  auto optional = [&](int i) -> StatusOr<Val*> {
    if (!c.HasIn(i)) return static_cast<Val*>(nullptr);
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    return &v;
  };
  HEXIR_ASSIGN_OR_RETURN(Val* bias, optional(3));
  HEXIR_ASSIGN_OR_RETURN(L.lens, optional(4));
  if (L.lens) c.Mat(*L.lens);
  HEXIR_ASSIGN_OR_RETURN(Val* h0_in, optional(5));
  Val* c0_in = nullptr;
  Val* peep_in = nullptr;
  if (cell == Cell::kLstm) {
    HEXIR_ASSIGN_OR_RETURN(c0_in, optional(6));
    HEXIR_ASSIGN_OR_RETURN(peep_in, optional(7));
  }
  Shape state = {L.batch, Dim::Static(L.hidden)};
  std::vector<Val> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    Val wd = Part(c, w, d), rd = Part(c, r, d);
    Val bd, h0, c0, pd;
    if (bias) bd = Part(c, *bias, d);
    auto initial = [&](Val* in) {
      if (!in) {
        Val z;
        z.et = L.et;
        z.shape = state;
        z.name = b.Filled(state, L.et, 0);
        return z;
      }
      Val s = layout ? c.Transpose(*in, {1, 0, 2}) : *in;
      return Part(c, s, d);
    };
    h0 = initial(h0_in);
    if (cell == Cell::kLstm) c0 = initial(c0_in);
    if (peep_in) pd = Part(c, *peep_in, d);
    bool reverse = direction == "reverse" || d == 1;
    HEXIR_ASSIGN_OR_RETURN(DirectionResult res,
                           RunDirection(c, L, x, wd, rd, bias ? &bd : nullptr, h0,
                                        cell == Cell::kLstm ? &c0 : nullptr, peep_in ? &pd : nullptr, reverse,
                                        std::vector<Activation>(acts.begin() + d * per_dir,
                                                                acts.begin() + (d + 1) * per_dir)));
    ys.push_back(res.y);
    hs.push_back(res.h);
    if (cell == Cell::kLstm) cs.push_back(res.c);
  }
  // Y: [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]); Y_h, Y_c: [dirs, batch, H]
  // (layout 1: [batch, dirs, H]).
  Val y = StackDirections(c, ys, 1);
  Val yh = StackDirections(c, hs, 0);
  if (layout) {
    y = c.Transpose(y, {2, 0, 1, 3});
    yh = c.Transpose(yh, {1, 0, 2});
  }
  if (c.node->output_size() > 0) c.SetOut(0, y);
  if (c.node->output_size() > 1) c.SetOut(1, yh);
  if (cell == Cell::kLstm && c.node->output_size() > 2) {
    Val yc = StackDirections(c, cs, 0);
    if (layout) yc = c.Transpose(yc, {1, 0, 2});
    c.SetOut(2, yc);
  }
  return Status::Ok();
}

}  // namespace

Status LowerGRU(Context& c) { return LowerRecurrent(c, Cell::kGru); }
Status LowerLSTM(Context& c) { return LowerRecurrent(c, Cell::kLstm); }
Status LowerRNN(Context& c) { return LowerRecurrent(c, Cell::kRnn); }

}  // namespace hexir::importers::onnx
