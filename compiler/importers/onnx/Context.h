// Internal state of one import: the value table (ONNX name -> Val), the node being lowered and
// its attributes, and the shared lowering helpers (broadcasting, reductions, reshapes, pads)
// that the op files (one per ONNX operator category, see OpTable.cc) build on. Every fallible
// call returns Status / StatusOr; nothing throws.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/onnx/Builder.h"

namespace hexir::importers::onnx {

class Context {
 public:
  using ValRef = std::reference_wrapper<Val>;

  Builder b;
  std::map<std::string, Val> values;
  int64_t opset = 13;
  int64_t training_opset = 0;  // the model's ai.onnx.preview.training version (0: not imported)
  int64_t microsoft_opset = 0;  // the model's com.microsoft version (0: not imported)
  std::string model_dir;  // external data locations are relative to it ("" = ".")
  // Called after each node of `graph` is lowered (progress on a terminal); may be empty.
  std::function<void(const ::onnx::GraphProto& graph, int node_index)> on_node;
  const ::onnx::NodeProto* node = nullptr;
  // Expand's results by SSA name: the smaller value each broadcasts (materialized; its rank at
  // most the result's, dims right-aligned), for consumers that can read it instead
  // (ScatterElements' indices: PyTorch's index_put exports an index expanded to the updates).
  std::map<std::string, Val> broadcast_sources;

  // An InvalidArgument whose message is `node '<name>' (op <Type>): <what>` (just `what`
  // outside a node).
  [[nodiscard]] Status Error(const std::string& what) const;

  // Node operands. In(i) fails when input i is absent or not defined yet; HasIn is false for
  // missing/empty names. `HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));` binds a reference.
  bool HasIn(int i) const;
  StatusOr<ValRef> In(int i);  // a tensor: a sequence or optional operand is an error
  StatusOr<ValRef> InAny(int i);  // a tensor, sequence or optional
  StatusOr<ValRef> InList(int i);  // a sequence or optional
  int NumIn() const { return node->input_size(); }
  void SetOut(int i, Val v);
  // Stores the value, or returns its error: `return c.SetOut(0, c.Elementwise(...));`.
  [[nodiscard]] Status SetOut(int i, StatusOr<Val> v);
  // The same with the value's unsigned flag set (ops that choose an unsigned output type).
  [[nodiscard]] Status SetOut(int i, StatusOr<Val> v, bool is_unsigned);

  // Attributes.
  bool HasAttr(const std::string& name) const;
  int64_t AttrI(const std::string& name, int64_t def) const;
  float AttrF(const std::string& name, float def) const;
  std::string AttrS(const std::string& name, const std::string& def) const;
  std::vector<int64_t> AttrInts(const std::string& name) const;
  std::vector<float> AttrFloats(const std::string& name) const;
  const ::onnx::TensorProto* AttrT(const std::string& name) const;
  const ::onnx::GraphProto* AttrG(const std::string& name) const;  // If/Loop/Scan bodies

  // Values.
  const std::string& Mat(Val& v);  // SSA name, emitting constants
  StatusOr<std::vector<int64_t>> ConstInts(Val& v, const char* what);  // static integer contents
  StatusOr<std::vector<double>> ConstFloats(Val& v, const char* what);
  // A shape operand's integer contents: its known ones, or (a run-time 0-D/1-D integer tensor
  // of static extent <= kMaxHostReadElements) each element read on the host as an `index`
  // (tensor.extract + index_cast). A copy of v with `ints` set; v itself is left unchanged, so
  // reads made inside a region never leak out of it.
  StatusOr<Val> ShapeOperand(Val& v, const char* what);
  StatusOr<Val> FromTensorProto(const ::onnx::TensorProto& t);
  static std::string ElementType(int onnx_type);  // "" when unsupported; uintN -> iN
  static bool IsUnsignedType(int onnx_type);       // UINT8 UINT16 UINT32 UINT64
  // Why an element type ElementType refuses is refused, by name: "element type string is not
  // supported (Hexir tensors hold numbers, not strings)", "element type complex64 is not
  // supported", "element type 42 is not supported" (a code ONNX 1.12 does not name).
  static std::string UnsupportedType(int onnx_type);

  // Helpers.
  StatusOr<Shape> BroadcastShapes(const std::vector<const Val*>& vs) const;
  static std::string BroadcastMap(const Val& v, const Shape& out);
  // A generic over the numpy broadcast of ins applying `body` to their elements. Where a `?`
  // extent meets a different one, ONNX's broadcast is chosen at run time (BroadcastAtRunTime).
  StatusOr<Val> Elementwise(std::vector<Val*> ins, const std::string& out_et, const BodyFn& body);
  // Whether a `?` extent meets a different one at some position of `out`: another `?` (SSA
  // value), or a static extent (out's, which is then not 1), either of which may be 1 at run time.
  static bool MeetsAtRunTime(const std::vector<Val*>& ins, const Shape& out);
  // Elementwise's form for extents decided at run time (RunTimeBroadcast.cc): a check that they
  // broadcast (equal or 1, naming the node, the dim and the operands), and a host `scf.if`
  // between the plain generic (no operand is 1 where another is not) and one reading each
  // operand at position 0 along its run-time 1 dims. The first `data` operands are read by
  // `body` (the output's block argument last); the rest only contribute extents (Expand's
  // shape). `shape` is BroadcastShapes(ins).
  StatusOr<Val> BroadcastAtRunTime(std::vector<Val*> ins, size_t data, const Shape& shape,
                                   const std::string& out_et, const BodyFn& body);
  // The host's part of BroadcastAtRunTime: the checks, the output extents `out` (a `?`
  // meeting another becomes `a == 1 ? b : a`; a static N stays), and for operand k at output
  // position i the i1 flags eq[k][i] (its extent is out[i]) and unit[k][i] (it is 1), both
  // empty where the extents are one value or the operand's extent is a static one.
  struct RunTimeExtents {
    Shape out;
    std::vector<std::vector<std::string>> eq, unit;
  };
  RunTimeExtents DecideAtRunTime(const std::vector<Val*>& ins, const Shape& shape);
  StatusOr<Val> Reduce(Val& x, std::vector<int64_t> axes, bool keepdims, const std::string& kind);
  StatusOr<Val> ReshapeTo(Val& x, const Shape& target);
  Val Pad(Val& x, const std::vector<Dim>& begin, const std::vector<Dim>& end,
          const std::string& mode, double value);
  Val Transpose(Val& x, const std::vector<int64_t>& perm);  // perm: a valid permutation
  StatusOr<Val> MatMul(Val& a, Val& bv);
  // out[pre..., idx..., post...] = data[pre..., indices[idx...], post...] along `axis`; an
  // integer index below 0 counts from the end (`i + n`). Gather, Compress, Unique.
  Val GatherAlong(Val& data, int64_t axis, Val& indices);
  StatusOr<int64_t> NormAxis(int64_t axis, int64_t rank) const;

 private:
  // Reduce of known contents (sum prod max min), folded at import time.
  Val ReduceKnown(const Val& x, const std::vector<bool>& reduced, bool keepdims,
                  const std::string& kind);
  // ReshapeTo once the element counts are known to agree.
  Val ReshapeChecked(Val& x, const Shape& target);
  // A dynamic reshape as collapse_shape + expand_shape (views, no copy) when x's and target's
  // dims split into consecutive groups of provably equal element counts; nullopt otherwise.
  std::optional<Val> ReshapeByGroups(Val& x, const Shape& target);
  // MatMul's batch dims `batch` (BroadcastShapes of the operands' batch parts) where a `?`
  // extent meets a different one (MeetsAtRunTime): DecideAtRunTime's checks and extents, and
  // a and bm replaced by their broadcast along the batch dims that may be 1 at run time
  // (RunTimeBroadcast.cc). Returns the output's batch dims.
  Shape BroadcastBatchAtRunTime(Val& a, Val& bm, const Shape& batch);
};

// A value whose integer contents are known (shape computations): 1-D of ints.size()
// elements, or 0-D when `scalar`.
Val KnownInts(const std::string& et, std::vector<Dim> ints, bool scalar = false);

// Values folded at import time: a static shape of at most kMaxKnownElements elements whose
// contents are known, as `ints` (integers and i1, each static or a host index) or `floats`
// (f32/f64, static).
inline constexpr int64_t kMaxKnownElements = 4096;
// Shape operands computed at run time are read back element by element up to this length.
inline constexpr int64_t kMaxHostReadElements = 64;
bool IsKnown(const Val& v);
// The extents of a static shape (callers check IsKnown or the shape first).
std::vector<int64_t> StaticExtents(const Shape& shape);
// The known value of static shape `out` whose element at each position is x's element at
// flat index source(position) (positions row-major; x known).
Val KnownPositions(const Val& x, const std::vector<int64_t>& out,
                   const std::function<int64_t(const std::vector<int64_t>& position)>& source);

}  // namespace hexir::importers::onnx
