// ONNX sequences and optionals (onnx/defs/sequence, onnx/defs/optional) as compile-time lists:
// a Val whose `list` holds the element tensors (an optional: none or one element). Positions,
// split sizes and conditions must be known at import time, so every length is static; the
// elements themselves are ordinary tensors (static or dynamic shapes, run-time contents).
// SequenceMap and SplitToSequence/ConcatFromSequence lower their per-element work through the
// op table (`LowerAs`), so they cost what the element ops cost.
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

Val MakeList(Val::List kind, std::vector<Val> elements) {
  Val v;
  v.list_kind = kind;
  v.list = std::make_shared<std::vector<Val>>(std::move(elements));
  return v;
}

// Operand i as a static position in a list of n elements (negative counts from the end;
// `insert` allows n itself).
StatusOr<int64_t> Position(Context& c, int i, int64_t n, bool insert) {
  HEXIR_ASSIGN_OR_RETURN(Val& p, c.In(i));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.ConstInts(p, "the position"));
  if (v.size() != 1) return c.Error("the position must have one element");
  int64_t pos = v[0] < 0 ? v[0] + n : v[0];
  if (pos < 0 || pos > n || (pos == n && !insert))
    return c.Error("position " + std::to_string(v[0]) + " is outside a sequence of " + std::to_string(n) +
                   " elements");
  return pos;
}

}  // namespace

Status LowerConcatFromSequence(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& s, c.InList(0));
  if (s.list_kind != Val::List::kSequence) return c.Error("the input must be a sequence");
  if (s.list->empty()) return c.Error("the sequence is empty (no element type or shape to concatenate)");
  int64_t rank = (*s.list)[0].rank();
  bool new_axis = c.AttrI("new_axis", 0) != 0;
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), new_axis ? rank + 1 : rank));
  std::vector<Val> parts;
  for (Val part : *s.list) {
    if (new_axis) {
      Shape target = part.shape;
      target.insert(target.begin() + axis, Dim::Static(1));
      HEXIR_ASSIGN_OR_RETURN(part, c.ReshapeTo(part, target));
    }
    parts.push_back(part);
  }
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> joined,
                         LowerAs(c, "Concat", parts, 1, [&](::onnx::NodeProto& n) { SetInt(n, "axis", axis); }));
  c.SetOut(0, joined[0]);
  return Status::Ok();
}

Status LowerOptional(Context& c) {
  std::vector<Val> elements;
  if (c.HasIn(0)) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.InAny(0));
    elements.push_back(v);
  }
  c.SetOut(0, MakeList(Val::List::kOptional, std::move(elements)));
  return Status::Ok();
}

Status LowerOptionalGetElement(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& v, c.InAny(0));
  if (v.list_kind != Val::List::kOptional) {  // opset 18: a tensor or sequence is its own element
    c.SetOut(0, v);
    return Status::Ok();
  }
  if (v.list->empty()) return c.Error("the optional '" + c.node->input(0) + "' is empty");
  c.SetOut(0, (*v.list)[0]);
  return Status::Ok();
}

Status LowerOptionalHasElement(Context& c) {
  bool has = false;
  if (c.HasIn(0)) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.InAny(0));
    has = v.list_kind != Val::List::kOptional || !v.list->empty();
  }
  c.SetOut(0, KnownInts("i1", {Dim::Static(has ? 1 : 0)}, /*scalar=*/true));
  return Status::Ok();
}

Status LowerSequenceAt(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& s, c.InList(0));
  const std::vector<Val> elements = *s.list;
  HEXIR_ASSIGN_OR_RETURN(int64_t pos, Position(c, 1, static_cast<int64_t>(elements.size()), false));
  c.SetOut(0, elements[pos]);
  return Status::Ok();
}

Status LowerSequenceConstruct(Context& c) {
  std::vector<Val> elements;
  for (int i = 0; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    if (!elements.empty() && v.et != elements[0].et)
      return c.Error("elements of one sequence must have one element type: " + elements[0].et + " and " + v.et);
    elements.push_back(v);
  }
  c.SetOut(0, MakeList(Val::List::kSequence, std::move(elements)));
  return Status::Ok();
}

Status LowerSequenceEmpty(Context& c) {
  c.SetOut(0, MakeList(Val::List::kSequence, {}));
  return Status::Ok();
}

Status LowerSequenceErase(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& s, c.InList(0));
  std::vector<Val> elements = *s.list;
  int64_t n = static_cast<int64_t>(elements.size()), pos = n - 1;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(pos, Position(c, 1, n, false));
  } else if (n == 0) {
    return c.Error("erasing from an empty sequence");
  }
  elements.erase(elements.begin() + pos);
  c.SetOut(0, MakeList(Val::List::kSequence, std::move(elements)));
  return Status::Ok();
}

Status LowerSequenceInsert(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& s, c.InList(0));
  std::vector<Val> elements = *s.list;
  HEXIR_ASSIGN_OR_RETURN(Val& t, c.In(1));
  if (!elements.empty() && t.et != elements[0].et)
    return c.Error("inserting a " + t.et + " tensor into a sequence of " + elements[0].et);
  int64_t n = static_cast<int64_t>(elements.size()), pos = n;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(pos, Position(c, 2, n, true));
  }
  elements.insert(elements.begin() + pos, t);
  c.SetOut(0, MakeList(Val::List::kSequence, std::move(elements)));
  return Status::Ok();
}

Status LowerSequenceLength(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& s, c.InList(0));
  c.SetOut(0, KnownInts("i64", {Dim::Static(static_cast<int64_t>(s.list->size()))}, /*scalar=*/true));
  return Status::Ok();
}

// SequenceMap(s, more...): the body once per element of s (unrolled); each further operand is
// a sequence of the same length (its element k) or a tensor (every time).
Status LowerSequenceMap(Context& c) {
  const ::onnx::GraphProto* g = c.AttrG("body");
  if (!g) return c.Error("the body attribute is required");
  if (g->input_size() != c.NumIn() || g->output_size() != c.node->output_size())
    return c.Error("the body's inputs and outputs do not match the operands and results");
  std::vector<Val> operands;
  for (int i = 0; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.InAny(i));
    operands.push_back(v);
  }
  if (operands[0].list_kind != Val::List::kSequence) return c.Error("the first input must be a sequence");
  size_t n = operands[0].list->size();
  for (size_t i = 1; i < operands.size(); ++i)
    if (operands[i].IsList() && operands[i].list->size() != n)
      return c.Error("input " + std::to_string(i) + " has " + std::to_string(operands[i].list->size()) +
                     " elements, the first " + std::to_string(n));
  const ::onnx::NodeProto* node = c.node;
  std::vector<std::vector<Val>> results(g->output_size());
  for (size_t k = 0; k < n; ++k) {
    std::map<std::string, Val> saved = c.values;
    for (const auto& t : g->initializer()) {
      HEXIR_ASSIGN_OR_RETURN(c.values[t.name()], c.FromTensorProto(t));
    }
    for (size_t i = 0; i < operands.size(); ++i)
      c.values[g->input(static_cast<int>(i)).name()] = operands[i].IsList() ? (*operands[i].list)[k] : operands[i];
    Status lowered = LowerGraphNodes(c, *g);
    c.node = node;
    std::vector<Val> outs;
    for (int o = 0; lowered.ok() && o < g->output_size(); ++o) {
      auto it = c.values.find(g->output(o).name());
      if (it == c.values.end()) lowered = c.Error("the body never defines its output '" + g->output(o).name() + "'");
      else outs.push_back(it->second);
    }
    c.values = std::move(saved);
    HEXIR_RETURN_IF_ERROR(lowered);
    for (size_t o = 0; o < outs.size(); ++o) results[o].push_back(outs[o]);
  }
  for (size_t o = 0; o < results.size(); ++o)
    c.SetOut(static_cast<int>(o), MakeList(Val::List::kSequence, std::move(results[o])));
  return Status::Ok();
}

// SplitToSequence(x, split?): pieces of the known sizes in `split` (a scalar: chunks of that
// size, the last one shorter), or of size 1 along the axis (squeezed unless keepdims).
Status LowerSplitToSequence(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), x.rank()));
  if (x.shape[axis].dynamic()) return c.Error("the split axis must have a static extent");
  int64_t extent = x.shape[axis].v;
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& split, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(sizes, c.ConstInts(split, "split"));
    if (split.rank() == 0) {
      int64_t chunk = sizes.empty() ? 0 : sizes[0];
      if (chunk <= 0) return c.Error("a scalar split must be positive");
      sizes.clear();
      for (int64_t at = 0; at < extent; at += chunk) sizes.push_back(std::min(chunk, extent - at));
    }
  } else {
    sizes.assign(static_cast<size_t>(extent), 1);
    squeeze = c.AttrI("keepdims", 1) == 0;
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != extent)
    return c.Error("split sizes add up to " + std::to_string(total) + ", the axis has " + std::to_string(extent));
  std::vector<Val> pieces;
  if (!sizes.empty()) {
    HEXIR_ASSIGN_OR_RETURN(pieces, LowerAs(c, "Split", {x}, static_cast<int>(sizes.size()),
                                           [&](::onnx::NodeProto& n) {
                                             SetInt(n, "axis", axis);
                                             auto* a = n.add_attribute();
                                             a->set_name("split");
                                             a->set_type(::onnx::AttributeProto::INTS);
                                             for (int64_t s : sizes) a->add_ints(s);
                                           }));
  }
  if (squeeze) {
    for (Val& p : pieces) {
      Shape target = p.shape;
      target.erase(target.begin() + axis);
      HEXIR_ASSIGN_OR_RETURN(p, c.ReshapeTo(p, target));
    }
  }
  c.SetOut(0, MakeList(Val::List::kSequence, std::move(pieces)));
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
