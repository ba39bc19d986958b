// Helpers that If, Loop and Scan (ControlFlow.cc) share to lower a body as the region of an
// scf op: the body's nodes lowered in place with its inputs bound (LowerBody) while the text
// is taken aside (CaptureRegion), block arguments and results typed (Typed), host scalars in and
// out of 0-D tensors, the carried-type check, and scan outputs stacked row by row.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

// g's outputs after binding its inputs to `args` and lowering its nodes (materialized when
// `materialize`: they are yielded from a region; a `?` extent the output's declaration gives
// static is first `tensor.cast` to it, where `refines` (when given) allows it for that output
// index, dim and extent: a Loop-carried value's declaration is one iteration's, kept only
// where it is the extent the value came in with).
using RefinesFn = std::function<bool(int output, int dim, int64_t extent)>;
StatusOr<std::vector<Val>> LowerBody(Context& c, const ::onnx::GraphProto& g, const std::vector<Val>& args,
                                     bool materialize, const RefinesFn& refines = nullptr);

// Runs `lower` as the body of a region: its text is taken out of the stream (returned in
// *text), the value table is restored and index constants are not cached meanwhile.
StatusOr<std::vector<Val>> CaptureRegion(Context& c, std::string* text,
                                         const std::function<StatusOr<std::vector<Val>>()>& lower);

// A tensor SSA value (block argument or op result) of `type`'s type; its dynamic dims are read
// with tensor.dim where this is called.
Val Typed(Context& c, const std::string& name, const Val& type);

// The one element of a 0-D or one-element tensor, read on the host.
std::string ExtractScalar(Context& c, Val& t);

// A 0-D tensor holding host scalar `s` of element type et.
Val FromScalar(Context& c, const std::string& s, const std::string& et);

// "tensor<2xf32>, tensor<i64>" and "%a, %b" of a list of values.
std::string TypeList(const std::vector<Val>& vs);
std::string NameList(const std::vector<Val>& vs);

// The join of two shapes of one rank: each dim static where both are that static extent,
// else dynamic (If branches of different extents, a Loop-carried value that grows).
Shape JoinedShape(const Shape& a, const Shape& b);

// Loop-carried values must come back with the type they went in with: out[first_out + k]
// against in[k], an error naming g's output otherwise.
Status CheckCarried(Context& c, const ::onnx::GraphProto& g, const std::vector<Val>& in,
                    const std::vector<Val>& out, int first_out);

// Scan outputs stacked along a new axis 0: the accumulator type [count, element...] (element
// shapes static, an error naming g's output `out_index` otherwise).
StatusOr<Val> StackType(Context& c, const ::onnx::GraphProto& g, int out_index, const Val& element,
                        const Dim& count);

// acc with row `row` replaced by `element` (a generic over acc's shape; emitted in the body).
// `row` is a host index, or with `device_row` a one-element i64 tensor read in the generic.
std::string WriteRow(Context& c, const Val& acc, const Val& element, const std::string& row,
                     bool device_row = false);

// The first `count` rows of acc (a loop that may stop before its trip count).
Val FirstRows(Context& c, const Val& acc, const Dim& count);

}  // namespace hexir::importers::onnx
