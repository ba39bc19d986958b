// Internal state of one import: the value table (ONNX name -> Val), the node being lowered and
// its attributes, and the shared lowering helpers (broadcasting, reductions, reshapes, pads)
// that the op files (ElementwiseOps.cc, NNOps.cc, ShapeOps.cc) build on.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Builder.h"

namespace hexir::importers::onnx {

class Context {
 public:
  Builder b;
  std::map<std::string, Val> values;
  int64_t opset = 13;
  const ::onnx::NodeProto* node = nullptr;

  // Node operands. In(i) throws when absent; HasIn is false for missing/empty names.
  bool HasIn(int i) const;
  Val& In(int i);
  int NumIn() const { return node->input_size(); }
  void SetOut(int i, Val v);
  [[noreturn]] void Fail(const std::string& what) const;

  // Attributes.
  bool HasAttr(const std::string& name) const;
  int64_t AttrI(const std::string& name, int64_t def) const;
  float AttrF(const std::string& name, float def) const;
  std::string AttrS(const std::string& name, const std::string& def) const;
  std::vector<int64_t> AttrInts(const std::string& name) const;
  const ::onnx::TensorProto* AttrT(const std::string& name) const;

  // Values.
  const std::string& Mat(Val& v);                      // SSA name, emitting constants
  std::vector<int64_t> ConstInts(Val& v, const char* what);  // static integer contents
  std::vector<double> ConstFloats(Val& v, const char* what);
  Val FromTensorProto(const ::onnx::TensorProto& t);
  static std::string ElementType(int onnx_type);  // "" when unsupported

  // Helpers.
  static Shape BroadcastShapes(Builder& b, const std::vector<const Val*>& vs);
  static std::string BroadcastMap(const Val& v, const Shape& out);
  Val Elementwise(std::vector<Val*> ins, const std::string& out_et, const BodyFn& body);
  Val Reduce(Val& x, std::vector<int64_t> axes, bool keepdims, const std::string& kind);
  Val ReshapeTo(Val& x, const Shape& target);
  Val Pad(Val& x, const std::vector<Dim>& begin, const std::vector<Dim>& end,
          const std::string& mode, double value);
  Val Transpose(Val& x, const std::vector<int64_t>& perm);
  Val MatMul(Val& a, Val& bv);
  int64_t NormAxis(int64_t axis, int64_t rank) const;
};

// Op tables: each returns true when it handled node->op_type().
bool LowerElementwise(Context& c);
bool LowerNN(Context& c);
bool LowerShape(Context& c);
bool LowerExtra(Context& c);

}  // namespace hexir::importers::onnx
