// The ONNX op tables: one row per (op type, opset range) -> lowering function, sorted by op
// type (a mis-sorted or duplicated row is a compile error); one table for the default domain,
// one for ai.onnx.preview.training (the optimizers). LowerNode looks the current node up by
// its domain, op type and the model's opset of that domain and runs its lowering.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

inline constexpr int kLatestOpset = 1 << 30;
inline constexpr char kTrainingDomain[] = "ai.onnx.preview.training";
inline constexpr char kMicrosoftDomain[] = "com.microsoft";  // onnxruntime's contrib ops  // max_opset of a row that no newer opset changed

struct OpLowering {
  const char* op_type;
  int min_opset;  // the ONNX version the lowered semantics start at
  int max_opset;  // the last version with these semantics (kLatestOpset: all later ones)
  Status (*lower)(Context& c);
};

// The row for op_type at opset of `domain` ("" or "ai.onnx": the default domain;
// kTrainingDomain), or null when no row covers it.
const OpLowering* FindLowering(const std::string& op_type, int64_t opset, const std::string& domain = "");

// Lowers c.node. Errors name the node and its op type; an op type without a row at the
// model's opset is "unsupported op type '<Type>' at opset <N>"; a domain without a table is
// "unsupported op domain '<domain>'".
Status LowerNode(Context& c);

// Lowers `op_type` on `ins` through the op table as if it were a node of the graph (named
// like the current node, attributes set by `attrs`); its `outs` outputs. Lowerings that
// compose other ops (SequenceMap, SplitToSequence, Attention) use it.
StatusOr<std::vector<Val>> LowerAs(Context& c, const std::string& op_type, const std::vector<Val>& ins, int outs,
                                   const std::function<void(::onnx::NodeProto&)>& attrs);

// Sets an int attribute on a node LowerAs builds (`[](auto& n) { SetInt(n, "axis", 2); }`).
void SetInt(::onnx::NodeProto& n, const std::string& name, int64_t v);

// The ONNX ops that work on string tensors (StringNormalizer, RegexFullMatch, StringConcat,
// StringSplit): none is lowered, since Hexir tensors hold numbers.
bool IsStringOp(const std::string& op_type);

// The error LowerNode gives the first node of g (subgraphs included, in graph order) that
// needs strings, a string op or a Cast to string, naming it; Ok when no node does. Run before
// the graph's inputs are read, so that a model of string ops names its op rather than its
// string input.
Status RefuseStringNodes(Context& c, const ::onnx::GraphProto& g);

// Lowers the nodes of g in order (the main graph or a subgraph of If/Loop/Scan); every
// output a node names must be defined after it. Leaves c.node null.
Status LowerGraphNodes(Context& c, const ::onnx::GraphProto& g);

}  // namespace hexir::importers::onnx
