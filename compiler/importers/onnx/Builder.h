// MLIR text builder used by the ONNX importer: SSA naming, tensor values with static or
// dynamic dims, host index arithmetic for dynamic dims, and a linalg.generic emitter.
// Everything is emitted into the single entry block of one func.func, so any value defined
// earlier dominates later uses (index constants are cached on that basis).
// Builder calls never fail on the spot: an op that its element type does not define, or a
// shape division by zero, records the first such error (Error()) and emits a placeholder;
// the op table checks it after every node (OpTable.cc), so the text is never used.
// Not thread-safe; one Builder per imported function.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Dim.h"
#include "compiler/importers/onnx/SymbolicDims.h"

namespace hexir::importers::onnx {


// A tensor value. `name` is its SSA name, or empty while it exists only as known contents
// (`ints`, a shape computation folded at import time) and has not been materialized.
struct Val {
  std::string name;
  std::string et;  // MLIR element type: f32 f64 f16 bf16 i1 i8 i16 i32 i64
  Shape shape;
  bool has_ints = false;      // integer contents known (static or symbolic), row-major
  std::vector<Dim> ints;
  bool has_floats = false;    // float contents known (constants of <= 4096 elements)
  std::vector<double> floats;
  std::string raw;            // little-endian bytes of a constant (re-emit with another shape)
  bool is_unsigned = false;   // uint8..uint64: a signless iN read with unsigned semantics
  // A sequence or optional: a compile-time list (Sequence.cc) whose elements are `list` (an
  // optional: none or one); the tensor fields above are unused.
  enum class List { kNone, kSequence, kOptional };
  List list_kind = List::kNone;
  std::shared_ptr<std::vector<Val>> list;
  bool IsList() const { return list_kind != List::kNone; }
  bool IsFloat() const { return et[0] == 'f' || et == "bf16"; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

// Body callback of a generic: gets the block argument names (inputs then outputs) and
// returns the SSA name of the yielded value(s) (comma-separated for several outputs).
using BodyFn = std::function<std::string(const std::vector<std::string>& args)>;

class Builder {
 public:
  std::string Fresh();                          // "%vN"
  void Line(const std::string& text);           // one op, indented
  std::string Text() const { return out_.str(); }
  // Text emitted from here on can be taken back out (a region body lowered before the header
  // that needs its types): Mark() then TakeSince(mark) removes and returns it; Emit puts text
  // back verbatim.
  size_t Mark() const { return out_.str().size(); }
  std::string TakeSince(size_t mark);
  void Emit(const std::string& text) { out_ << text; }
  // Between EnterRegion and ExitRegion (an scf region) index constants are not cached: a
  // cached one would not dominate the code after the region.
  // The device (`hexir.device`, a module compiled with --target repeated) the generics
  // emitted from now on are annotated with; -1: none (placed by the compiler's affinity).
  void SetDevice(int64_t device) { device_ = device; }
  void EnterRegion() { ++body_depth_; }
  void ExitRegion() { --body_depth_; }

  static std::string TensorType(const Shape& shape, const std::string& et);
  static std::string TensorType(const Val& v) { return TensorType(v.shape, v.et); }
  static std::string FloatBits(double value, const std::string& et);  // "0x3F800000"
  // s quoted for the message of a `hexir.check` (an MLIR string whose `{}` are placeholders:
  // braces in s become parentheses).
  static std::string CheckText(const std::string& s);
  // `hexir.check ok`: when `ok` (i1) fails at run time, the call fails with `before`, the value
  // of `index` (an index SSA name), then `after`.
  void CheckIndex(const std::string& ok, const std::string& before, const std::string& index,
                  const std::string& after);

  // Scalars.
  std::string IndexConst(int64_t v);                       // cached, entry block only
  std::string ScalarConst(const std::string& et, double v);  // emitted where called
  std::string DimValue(const Dim& d);                      // index SSA of a dim
  // Dim arithmetic (folds when static, host arith on index otherwise).
  Dim Add(const Dim& a, const Dim& b);
  Dim Sub(const Dim& a, const Dim& b);
  Dim Mul(const Dim& a, const Dim& b);
  Dim FloorDiv(const Dim& a, const Dim& b);  // non-negative operands
  Dim Min(const Dim& a, const Dim& b);
  Dim Max(const Dim& a, const Dim& b);
  Dim Product(const Shape& s, size_t begin, size_t end);
  // True when the products of a[ab, ae) and b[bb, be) are provably one quantity (their
  // polynomial forms are equal); emits nothing.
  bool SameProduct(const Shape& a, size_t ab, size_t ae, const Shape& b, size_t bb, size_t be) const;
  Dim Rem(const Dim& a, const Dim& b);  // remainder with the dividend's sign (C %)
  Dim TruncDiv(const Dim& a, const Dim& b);  // quotient rounded toward zero (C /)
  // 1 or 0 for `a pred b` (pred: eq ne slt sle sgt sge). Folds when both are static, when they
  // are the same value, and when a non-negative dim meets a negative or zero constant.
  Dim Compare(const std::string& pred, const Dim& a, const Dim& b);
  Dim SelectDim(const Dim& cond, const Dim& a, const Dim& b);  // cond != 0 ? a : b
  // Equal quantities computed twice are one SSA value (SymbolicDims.h): `(h + 2 - 3) + 1` is
  // `h`, and a second `(h - 1) floordiv 2 + 1` is the first one's value.
  // Dynamic dims known to be >= 0 (tensor extents and arithmetic that keeps them so).
  void MarkNonNegative(const std::string& ssa) { non_negative_[ssa] = true; }
  bool NonNegative(const Dim& d) const { return d.dynamic() ? non_negative_.count(d.ssa) > 0 : d.v >= 0; }
  // f32/f64 host scalar holding a dim's value (for means over dynamic extents).
  std::string DimAsFloat(const Dim& d, const std::string& et);

  // Tensors.
  std::string Empty(const Shape& shape, const std::string& et);
  std::string Filled(const Shape& shape, const std::string& et, double value);
  // linalg.generic with one result. `init` empty -> tensor.empty of out shape.
  std::string Generic(const std::vector<const Val*>& ins, const std::vector<std::string>& in_maps,
                      const std::string& out_map, const Shape& out_shape,
                      const std::string& out_et, int loops,
                      const std::vector<std::string>& iterators, const std::string& init,
                      const BodyFn& body);

  // A generic without inputs over `out_shape` (identity output map, all loops parallel): the
  // body computes each element from its linalg.index positions.
  std::string IndexGeneric(const Shape& out_shape, const std::string& out_et, const BodyFn& body);

  // IndexGeneric as a value of `out_shape` and `out_et`: `element` gets the loop positions
  // (`linalg.index` 0..rank-1, emitted first in the body) and returns the element's SSA name.
  Val Tabulate(const Shape& out_shape, const std::string& out_et,
               const std::function<std::string(std::vector<std::string> idx)>& element);

  // Body helpers (typed by element type).
  std::string Bin(const std::string& fop, const std::string& iop, const std::string& a,
                  const std::string& b, const std::string& et);
  std::string Op1(const std::string& op, const std::string& a, const std::string& et);
  std::string Cmp(const std::string& fpred, const std::string& ipred, const std::string& a,
                  const std::string& b, const std::string& et);  // -> i1
  std::string Select(const std::string& c, const std::string& a, const std::string& b,
                     const std::string& et);
  // Integers of an unsigned side extend with zeros and convert with uitofp / fptoui.
  std::string Convert(const std::string& v, const std::string& from, const std::string& to,
                      bool from_unsigned = false, bool to_unsigned = false);
  // `tensor.extract v[idx...]` (inside a body: a read of a tensor the generic captures).
  std::string Extract(const Val& v, const std::vector<std::string>& idx);
  // An integer element (i32/i64) as an `index`.
  std::string ToIndex(const std::string& v, const std::string& et);
  // An `index` as an i64 element (the inverse of ToIndex).
  std::string ToI64(const std::string& index);
  // The row-major linear index of `coords` in `extents` (index values): Delinearize's inverse.
  std::string Linearize(const std::vector<std::string>& coords, const std::vector<std::string>& extents);
  // The coordinates of row-major linear index `lin` (index) in a shape of `extents` (index
  // SSA names): remainders and quotients from the last extent.
  std::vector<std::string> Delinearize(const std::string& lin, const std::vector<std::string>& extents);
  // acc && cond on i1 (acc empty: cond itself, nothing emitted).
  std::string AndI1(const std::string& acc, const std::string& cond);
  // A host `scf.if` on `cond` of a value of `type`: x itself (tensor.cast to `type` where a
  // static extent of x is `?` there) when it holds, else the value `otherwise` emits inside
  // the else region (index constants there are not cached: EnterRegion). Its result's name.
  std::string XOr(const std::string& cond, const Val& x, const std::string& type,
                  const std::function<std::string()>& otherwise);

  // `%i = linalg.index k : index` for k in [0, loops), inside a generic body.
  std::vector<std::string> LoopIndices(int loops);
  static std::string Join(const std::vector<std::string>& names);  // "a, b, c"

  static std::string Map(int loops, const std::vector<std::string>& results);
  static std::string IdentityMap(int loops, int first = 0);

  // The first error recorded since the last call (empty when none), and clears it.
  std::string TakeError();

 private:
  int64_t device_ = -1;
  std::ostringstream out_;
  int next_ = 0;
  std::map<int64_t, std::string> index_consts_;
  std::map<std::string, bool> non_negative_;
  SymbolicDims dims_;  // forms of the index values emitted; values reused in the entry block
  int body_depth_ = 0;  // > 0 while emitting a generic body: constants are not cached
  std::string error_;   // first error since TakeError()
  Dim Polynomial(const char* op, const Dim& a, const Dim& b, bool keeps_sign,
                 const std::optional<SymbolicDims::Poly>& form);
  Dim Atom(const std::string& op, std::vector<Dim> operands, bool commutative,
           const std::function<Dim()>& emit);
  Dim Quotient(const Dim& a, const Dim& b);
  void RecordError(const std::string& what) {
    if (error_.empty()) error_ = what;
  }
};

int ElementBytes(const std::string& et);
bool IsFloatType(const std::string& et);

}  // namespace hexir::importers::onnx
