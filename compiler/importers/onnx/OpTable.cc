#include "compiler/importers/onnx/OpTable.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>

#include "compiler/importers/onnx/Folding.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

constexpr int kLatest = kLatestOpset;

// Sorted by op type, then by min_opset; rows of one op type do not overlap.
constexpr OpLowering kOpTable[] = {
    {"Abs", 1, kLatest, LowerAbs},
    {"Acos", 7, kLatest, LowerAcos},
    {"Acosh", 9, kLatest, LowerAcosh},
    {"Add", 1, kLatest, LowerAdd},
    {"AffineGrid", 20, kLatest, LowerAffineGrid},
    {"And", 1, kLatest, LowerAnd},
    {"ArgMax", 1, kLatest, LowerArgMax},
    {"ArgMin", 1, kLatest, LowerArgMin},
    {"Asin", 7, kLatest, LowerAsin},
    {"Asinh", 9, kLatest, LowerAsinh},
    {"Atan", 7, kLatest, LowerAtan},
    {"Atanh", 9, kLatest, LowerAtanh},
    {"Attention", 23, kLatest, LowerAttention},
    {"AveragePool", 1, kLatest, LowerAveragePool},
    {"BatchNormalization", 1, kLatest, LowerBatchNormalization},
    {"BitShift", 11, kLatest, LowerBitShift},
    {"BitwiseAnd", 18, kLatest, LowerBitwiseAnd},
    {"BitwiseNot", 18, kLatest, LowerBitwiseNot},
    {"BitwiseOr", 18, kLatest, LowerBitwiseOr},
    {"BitwiseXor", 18, kLatest, LowerBitwiseXor},
    {"BlackmanWindow", 17, kLatest, LowerBlackmanWindow},
    {"Cast", 1, kLatest, LowerCast},
    {"CastLike", 15, kLatest, LowerCastLike},
    {"Ceil", 1, kLatest, LowerCeil},
    {"Celu", 12, kLatest, LowerCelu},
    {"CenterCropPad", 18, kLatest, LowerCenterCropPad},
    {"Clip", 1, 10, LowerClipWithAttributes},
    {"Clip", 11, kLatest, LowerClip},
    {"Compress", 9, kLatest, LowerCompress},
    {"Concat", 1, kLatest, LowerConcat},
    {"ConcatFromSequence", 11, kLatest, LowerConcatFromSequence},
    {"Constant", 1, kLatest, LowerConstant},
    {"ConstantOfShape", 9, kLatest, LowerConstantOfShape},
    {"Conv", 1, kLatest, LowerConv},
    {"ConvInteger", 10, kLatest, LowerConvInteger},
    {"ConvTranspose", 1, kLatest, LowerConvTranspose},
    {"Cos", 7, kLatest, LowerCos},
    {"Cosh", 9, kLatest, LowerCosh},
    {"CumSum", 11, kLatest, LowerCumSum},
    {"DFT", 17, 19, LowerDFT},  // 20: axis became an input
    {"DepthToSpace", 1, kLatest, LowerDepthToSpace},
    {"DequantizeLinear", 10, kLatest, LowerDequantizeLinear},
    {"Det", 11, kLatest, LowerDet},
    {"Div", 1, kLatest, LowerDiv},
    {"Dropout", 1, kLatest, LowerDropout},
    {"DynamicQuantizeLinear", 11, kLatest, LowerDynamicQuantizeLinear},
    {"Einsum", 12, kLatest, LowerEinsum},
    {"Elu", 1, kLatest, LowerElu},
    {"Equal", 1, kLatest, LowerEqual},
    {"Erf", 9, kLatest, LowerErf},
    {"Exp", 1, kLatest, LowerExp},
    {"Expand", 8, kLatest, LowerExpand},
    {"EyeLike", 9, kLatest, LowerEyeLike},
    {"Flatten", 1, kLatest, LowerFlatten},
    {"Floor", 1, kLatest, LowerFloor},
    {"GRU", 7, kLatest, LowerGRU},
    {"Gather", 1, kLatest, LowerGather},
    {"GatherElements", 11, kLatest, LowerGatherElements},
    {"GatherND", 11, kLatest, LowerGatherND},
    {"Gelu", 20, kLatest, LowerGelu},
    {"Gemm", 1, kLatest, LowerGemm},
    {"GlobalAveragePool", 1, kLatest, LowerGlobalAveragePool},
    {"GlobalLpPool", 1, kLatest, LowerGlobalLpPool},
    {"GlobalMaxPool", 1, kLatest, LowerGlobalMaxPool},
    {"Greater", 1, kLatest, LowerGreater},
    {"GreaterOrEqual", 12, kLatest, LowerGreaterOrEqual},
    {"GridSample", 16, kLatest, LowerGridSample},
    {"GroupNormalization", 18, kLatest, LowerGroupNormalization},
    {"HammingWindow", 17, kLatest, LowerHammingWindow},
    {"HannWindow", 17, kLatest, LowerHannWindow},
    {"HardSigmoid", 1, kLatest, LowerHardSigmoid},
    {"HardSwish", 14, kLatest, LowerHardSwish},
    {"Hardmax", 13, kLatest, LowerHardmax},  // before 13: coerced to 2-D (not lowered)
    {"Identity", 1, kLatest, LowerIdentity},
    {"If", 1, kLatest, LowerIf},
    {"ImageScaler", 1, 9, LowerImageScaler},
    {"InstanceNormalization", 1, kLatest, LowerInstanceNormalization},
    {"IsInf", 10, kLatest, LowerIsInf},
    {"IsNaN", 9, kLatest, LowerIsNaN},
    {"LRN", 1, kLatest, LowerLRN},
    {"LSTM", 7, kLatest, LowerLSTM},
    {"LayerNormalization", 1, kLatest, LowerLayerNormalization},  // onnxruntime's before 17
    {"LeakyRelu", 1, kLatest, LowerLeakyRelu},
    {"Less", 1, kLatest, LowerLess},
    {"LessOrEqual", 12, kLatest, LowerLessOrEqual},
    {"Log", 1, kLatest, LowerLog},
    {"LogSoftmax", 1, kLatest, LowerLogSoftmax},
    {"Loop", 1, kLatest, LowerLoop},
    {"LpNormalization", 1, kLatest, LowerLpNormalization},
    {"LpPool", 1, kLatest, LowerLpPool},
    {"MatMul", 1, kLatest, LowerMatMul},
    {"MatMulInteger", 10, kLatest, LowerMatMulInteger},
    {"Max", 1, kLatest, LowerMax},
    {"MaxPool", 1, kLatest, LowerMaxPool},
    {"MaxUnpool", 9, kLatest, LowerMaxUnpool},
    {"Mean", 1, kLatest, LowerMean},
    {"MeanVarianceNormalization", 9, kLatest, LowerMeanVarianceNormalization},
    {"MelWeightMatrix", 17, kLatest, LowerMelWeightMatrix},
    {"Min", 1, kLatest, LowerMin},
    {"Mish", 18, kLatest, LowerMish},
    {"Mod", 10, kLatest, LowerMod},
    {"Mul", 1, kLatest, LowerMul},
    {"Neg", 1, kLatest, LowerNeg},
    {"NegativeLogLikelihoodLoss", 12, kLatest, LowerNegativeLogLikelihoodLoss},
    {"NonMaxSuppression", 10, kLatest, LowerNonMaxSuppression},
    {"NonZero", 9, kLatest, LowerNonZero},
    {"Not", 1, kLatest, LowerNot},
    {"OneHot", 9, kLatest, LowerOneHot},
    {"Optional", 15, kLatest, LowerOptional},
    {"OptionalGetElement", 15, kLatest, LowerOptionalGetElement},
    {"OptionalHasElement", 15, kLatest, LowerOptionalHasElement},
    {"Or", 1, kLatest, LowerOr},
    {"PRelu", 1, kLatest, LowerPRelu},
    {"Pad", 1, 10, LowerPadWithAttributes},
    {"Pad", 11, kLatest, LowerPad},
    {"Pow", 1, kLatest, LowerPow},
    {"QLinearConv", 10, kLatest, LowerQLinearConv},
    {"QLinearMatMul", 10, kLatest, LowerQLinearMatMul},
    {"QuantizeLinear", 10, kLatest, LowerQuantizeLinear},
    {"RMSNormalization", 23, kLatest, LowerRMSNormalization},
    {"RNN", 7, kLatest, LowerRNN},
    {"Range", 11, kLatest, LowerRange},
    {"Reciprocal", 1, kLatest, LowerReciprocal},
    {"ReduceL1", 1, kLatest, LowerReduceL1},
    {"ReduceL2", 1, kLatest, LowerReduceL2},
    {"ReduceLogSum", 1, kLatest, LowerReduceLogSum},
    {"ReduceLogSumExp", 1, kLatest, LowerReduceLogSumExp},
    {"ReduceMax", 1, kLatest, LowerReduceMax},
    {"ReduceMean", 1, kLatest, LowerReduceMean},
    {"ReduceMin", 1, kLatest, LowerReduceMin},
    {"ReduceProd", 1, kLatest, LowerReduceProd},
    {"ReduceSum", 1, kLatest, LowerReduceSum},
    {"ReduceSumSquare", 1, kLatest, LowerReduceSumSquare},
    {"Relu", 1, kLatest, LowerRelu},
    {"Reshape", 1, 4, LowerReshapeWithAttribute},
    {"Reshape", 5, kLatest, LowerReshape},
    {"Resize", 10, kLatest, LowerResize},
    {"ReverseSequence", 10, kLatest, LowerReverseSequence},
    {"RoiAlign", 10, kLatest, LowerRoiAlign},
    {"RotaryEmbedding", 23, kLatest, LowerRotaryEmbedding},
    {"Round", 11, kLatest, LowerRound},
    {"STFT", 17, kLatest, LowerSTFT},
    {"Scan", 8, 8, LowerScanWithBatch},  // a batch axis and sequence_lens (batch 1, no lengths)
    {"Scan", 9, kLatest, LowerScan},
    {"Scatter", 9, 10, LowerScatter},  // deprecated in 11 for ScatterElements
    {"ScatterElements", 11, kLatest, LowerScatterElements},
    {"ScatterND", 11, kLatest, LowerScatterND},
    {"Selu", 1, kLatest, LowerSelu},
    {"SequenceAt", 11, kLatest, LowerSequenceAt},
    {"SequenceConstruct", 11, kLatest, LowerSequenceConstruct},
    {"SequenceEmpty", 11, kLatest, LowerSequenceEmpty},
    {"SequenceErase", 11, kLatest, LowerSequenceErase},
    {"SequenceInsert", 11, kLatest, LowerSequenceInsert},
    {"SequenceLength", 11, kLatest, LowerSequenceLength},
    {"SequenceMap", 17, kLatest, LowerSequenceMap},
    {"Shape", 1, kLatest, LowerShape},
    {"Shrink", 9, kLatest, LowerShrink},
    {"Sigmoid", 1, kLatest, LowerSigmoid},
    {"Sign", 9, kLatest, LowerSign},
    {"SimplifiedLayerNormalization", 1, kLatest, LowerRMSNormalization},  // onnxruntime's
    {"Sin", 7, kLatest, LowerSin},
    {"Sinh", 9, kLatest, LowerSinh},
    {"Size", 1, kLatest, LowerSize},
    {"Slice", 1, 9, LowerSliceWithAttributes},
    {"Slice", 10, kLatest, LowerSlice},
    {"Softmax", 1, kLatest, LowerSoftmax},
    {"SoftmaxCrossEntropyLoss", 12, kLatest, LowerSoftmaxCrossEntropyLoss},
    {"Softplus", 1, kLatest, LowerSoftplus},
    {"Softsign", 1, kLatest, LowerSoftsign},
    {"SpaceToDepth", 1, kLatest, LowerSpaceToDepth},
    {"Split", 1, kLatest, LowerSplit},
    {"SplitToSequence", 11, kLatest, LowerSplitToSequence},
    {"Sqrt", 1, kLatest, LowerSqrt},
    {"Squeeze", 1, kLatest, LowerSqueeze},
    {"Sub", 1, kLatest, LowerSub},
    {"Sum", 1, kLatest, LowerSum},
    {"Tan", 7, kLatest, LowerTan},
    {"Tanh", 1, kLatest, LowerTanh},
    {"TfIdfVectorizer", 9, kLatest, LowerTfIdfVectorizer},
    {"ThresholdedRelu", 10, kLatest, LowerThresholdedRelu},
    {"Tile", 6, kLatest, LowerTile},  // before 6: tiles and axis inputs
    {"TopK", 1, 9, LowerTopKWithAttribute},
    {"TopK", 10, kLatest, LowerTopK},
    {"Transpose", 1, kLatest, LowerTranspose},
    {"Trilu", 14, kLatest, LowerTrilu},
    {"Unique", 11, kLatest, LowerUnique},
    {"Unsqueeze", 1, kLatest, LowerUnsqueeze},
    {"Upsample", 7, kLatest, LowerUpsample},
    {"Where", 9, kLatest, LowerWhere},
    {"Xor", 1, kLatest, LowerXor},
};

// ai.onnx.preview.training, by that domain's version.
constexpr OpLowering kTrainingOpTable[] = {
    {"Adagrad", 1, kLatest, LowerAdagrad},
    {"Adam", 1, kLatest, LowerAdam},
    {"Momentum", 1, kLatest, LowerMomentum},
};

// com.microsoft (onnxruntime's contrib ops), by that domain's version.
constexpr OpLowering kMicrosoftOpTable[] = {
    {"Attention", 1, kLatest, LowerMicrosoftAttention},
    {"BiasGelu", 1, kLatest, LowerBiasGelu},
    {"DynamicQuantizeMatMul", 1, kLatest, LowerDynamicQuantizeMatMul},
    {"EmbedLayerNormalization", 1, kLatest, LowerEmbedLayerNormalization},
    {"FastGelu", 1, kLatest, LowerFastGelu},
    {"FusedConv", 1, kLatest, LowerFusedConv},
    {"FusedMatMul", 1, kLatest, LowerFusedMatMul},
    {"Gelu", 1, kLatest, LowerMicrosoftGelu},
    {"GroupQueryAttention", 1, kLatest, LowerGroupQueryAttention},
    {"MatMulIntegerToFloat", 1, kLatest, LowerMatMulIntegerToFloat},
    {"MatMulNBits", 1, kLatest, LowerMatMulNBits},
    {"MultiHeadAttention", 1, kLatest, LowerMultiHeadAttention},
    {"QGemm", 1, kLatest, LowerQGemm},
    {"QLinearAdd", 1, kLatest, LowerQLinearAdd},
    {"QLinearConcat", 1, kLatest, LowerQLinearConcat},
    {"QLinearGlobalAveragePool", 1, kLatest, LowerQLinearGlobalAveragePool},
    {"QLinearLeakyRelu", 1, kLatest, LowerQLinearLeakyRelu},
    {"QLinearMul", 1, kLatest, LowerQLinearMul},
    {"QLinearSigmoid", 1, kLatest, LowerQLinearSigmoid},
    {"QuickGelu", 1, kLatest, LowerQuickGelu},
    {"RotaryEmbedding", 1, kLatest, LowerMicrosoftRotaryEmbedding},
    {"SkipLayerNormalization", 1, kLatest, LowerSkipLayerNormalization},
    {"SkipSimplifiedLayerNormalization", 1, kLatest, LowerSkipSimplifiedLayerNormalization},
};

constexpr int Compare(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
}

template <size_t N>
constexpr bool RowsInOrder(const OpLowering (&table)[N]) {
  for (size_t i = 1; i < N; ++i) {
    const OpLowering& prev = table[i - 1];
    const OpLowering& row = table[i];
    if (row.min_opset > row.max_opset) return false;
    int order = Compare(prev.op_type, row.op_type);
    if (order > 0 || (order == 0 && prev.max_opset >= row.min_opset)) return false;
  }
  return true;
}
static_assert(RowsInOrder(kOpTable), "kOpTable rows must be sorted by op type, opset ranges disjoint");
static_assert(RowsInOrder(kTrainingOpTable), "kTrainingOpTable rows must be sorted by op type, opset ranges disjoint");
static_assert(RowsInOrder(kMicrosoftOpTable), "kMicrosoftOpTable rows must be sorted by op type, opset ranges disjoint");

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// "6-10", "11 and later".
std::string Range(const OpLowering& row) {
  if (row.max_opset == kLatest) return std::to_string(row.min_opset) + " and later";
  return std::to_string(row.min_opset) + "-" + std::to_string(row.max_opset);
}

// Outputs of input 0's (unsigned) element type are unsigned too, except for ops that make
// their output type themselves.
void MarkUnsignedOutputs(Context& c) {
  static const char* const kOwnTypes[] = {"ArgMax", "ArgMin", "Cast", "CastLike", "Shape", "Size"};
  if (!c.HasIn(0)) return;
  auto in = c.values.find(c.node->input(0));
  if (in == c.values.end() || !in->second.is_unsigned) return;
  for (const char* op : kOwnTypes)
    if (c.node->op_type() == op) return;
  for (const auto& name : c.node->output()) {
    auto out = c.values.find(name);
    if (out != c.values.end() && out->second.et == in->second.et) out->second.is_unsigned = true;
  }
}

constexpr const char* kStringOps[] = {"RegexFullMatch", "StringConcat", "StringNormalizer", "StringSplit"};

constexpr char kNoStrings[] = "strings are not supported (Hexir tensors hold numbers)";

}  // namespace

namespace {

template <size_t N>
const OpLowering* FindIn(const OpLowering (&table)[N], const std::string& op_type, int64_t opset) {
  auto [first, last] = std::equal_range(
      std::begin(table), std::end(table), op_type,
      [](const auto& a, const auto& b) {
        auto key = [](const auto& x) -> std::string_view {
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, OpLowering>) return x.op_type;
          else return x;
        };
        return key(a) < key(b);
      });
  for (auto it = first; it != last; ++it)
    if (opset >= it->min_opset && opset <= it->max_opset) return it;
  return nullptr;
}

// "unsupported op type 'T' at opset N (lowered for opsets ...)".
template <size_t N>
std::string Unsupported(const OpLowering (&table)[N], const std::string& op_type, int64_t opset) {
  std::string known;
  for (const OpLowering& r : table)
    if (op_type == r.op_type) known += std::string(known.empty() ? "" : ", ") + Range(r);
  std::string what = "unsupported op type '" + op_type + "' at opset " + std::to_string(opset);
  if (!known.empty()) what += " (lowered for opsets " + known + ")";
  return what;
}

}  // namespace

const OpLowering* FindLowering(const std::string& op_type, int64_t opset, const std::string& domain) {
  if (IsDefaultDomain(domain)) return FindIn(kOpTable, op_type, opset);
  if (domain == kTrainingDomain) return FindIn(kTrainingOpTable, op_type, opset);
  if (domain == kMicrosoftDomain) return FindIn(kMicrosoftOpTable, op_type, opset);
  return nullptr;
}

bool IsStringOp(const std::string& op_type) {
  for (const char* op : kStringOps)
    if (op_type == op) return true;
  return false;
}

Status RefuseStringNodes(Context& c, const ::onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    c.node = &n;
    if (IsDefaultDomain(n.domain()) && IsStringOp(n.op_type())) return c.Error(kNoStrings);
    if (IsDefaultDomain(n.domain()) && n.op_type() == "Cast" &&
        c.AttrI("to", 0) == ::onnx::TensorProto::STRING)
      return c.Error(std::string("cast to string: ") + kNoStrings);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) HEXIR_RETURN_IF_ERROR(RefuseStringNodes(c, a.g()));
      for (const auto& sub : a.graphs()) HEXIR_RETURN_IF_ERROR(RefuseStringNodes(c, sub));
    }
  }
  c.node = nullptr;
  return Status::Ok();
}

namespace {

// Before opset 7 the binary ops broadcast only their second operand, and only when asked
// (`broadcast = 1`); with `axis`, its dims line up with the first operand's from that axis
// on (`[C]` against `[N, C, H, W]` at axis 1), which numpy's rule spells as trailing ones.
// Returns the node to lower: `legacy` with input 1 renamed to that reshape, or c.node.
StatusOr<const ::onnx::NodeProto*> LegacyBroadcastOperand(Context& c, ::onnx::NodeProto& legacy) {
  static constexpr const char* kLegacyBroadcastOps[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or",
                                                        "Xor", "Equal", "Greater", "Less"};
  const ::onnx::NodeProto* n = c.node;
  if (c.opset >= 7 || c.node->input_size() != 2 || !c.HasAttr("axis") || c.AttrI("broadcast", 0) != 1 ||
      std::none_of(std::begin(kLegacyBroadcastOps), std::end(kLegacyBroadcastOps),
                   [&](const char* op) { return n->op_type() == op; }))
    return n;
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& b, c.In(1));
  int64_t axis = c.AttrI("axis", 0);
  if (axis < 0) axis += a.rank();
  if (axis < 0 || axis + b.rank() > a.rank())
    return c.Error("broadcast axis " + std::to_string(c.AttrI("axis", 0)) + " does not place the second operand's " +
                   std::to_string(b.rank()) + " dims within the first operand's " + std::to_string(a.rank()));
  Shape aligned = b.shape;
  aligned.resize(a.rank() - axis, Dim::Static(1));
  HEXIR_ASSIGN_OR_RETURN(Val reshaped, c.ReshapeTo(b, aligned));
  legacy = *n;
  legacy.set_input(1, n->input(1) + ".broadcast_at_axis_" + std::to_string(axis));
  c.values[legacy.input(1)] = std::move(reshaped);
  return &legacy;
}

Status LowerNodeAsGiven(Context& c) {
  const std::string& op_type = c.node->op_type();
  const std::string& domain = c.node->domain();
  bool training = domain == kTrainingDomain, microsoft = domain == kMicrosoftDomain;
  if (!IsDefaultDomain(domain) && !training && !microsoft) return c.Error("unsupported op domain '" + domain + "'");
  int64_t opset = training ? c.training_opset : microsoft ? c.microsoft_opset : c.opset;
  const OpLowering* row = FindLowering(op_type, opset, domain);
  if (!row && IsDefaultDomain(domain) && IsStringOp(op_type)) return c.Error(kNoStrings);
  if (!row) {
    std::string what = training    ? Unsupported(kTrainingOpTable, op_type, opset)
                       : microsoft ? Unsupported(kMicrosoftOpTable, op_type, opset)
                                   : Unsupported(kOpTable, op_type, opset);
    if (training || microsoft) what += " of domain " + domain;
    return c.Error(what);
  }
  bool folded = false;
  if (IsDefaultDomain(domain)) {
    HEXIR_ASSIGN_OR_RETURN(folded, FoldKnownNode(c));
  }
  if (!folded) HEXIR_RETURN_IF_ERROR(row->lower(c));
  MarkUnsignedOutputs(c);
  std::string builder_error = c.b.TakeError();
  if (!builder_error.empty()) return c.Error(builder_error);
  return Status::Ok();
}

}  // namespace

Status LowerNode(Context& c) {
  const ::onnx::NodeProto* original = c.node;
  ::onnx::NodeProto legacy;
  StatusOr<const ::onnx::NodeProto*> node = LegacyBroadcastOperand(c, legacy);
  if (!node.ok()) return node.status();
  c.node = *node;
  Status lowered = LowerNodeAsGiven(c);
  c.node = original;
  return lowered;
}

StatusOr<std::vector<Val>> LowerAs(Context& c, const std::string& op_type, const std::vector<Val>& ins, int outs,
                                   const std::function<void(::onnx::NodeProto&)>& attrs) {
  const ::onnx::NodeProto* node = c.node;
  ::onnx::NodeProto n;
  n.set_name(node->name());
  n.set_op_type(op_type);
  std::vector<std::string> names;
  auto temporary = [&](size_t k) { return node->name() + "/" + node->op_type() + "/" + std::to_string(k); };
  for (const Val& v : ins) {
    names.push_back(temporary(names.size()));
    c.values[names.back()] = v;
    n.add_input(names.back());
  }
  for (int k = 0; k < outs; ++k) {
    names.push_back(temporary(names.size()));
    n.add_output(names.back());
  }
  attrs(n);
  c.node = &n;
  Status lowered = LowerNode(c);
  c.node = node;
  std::vector<Val> results;
  for (int k = 0; lowered.ok() && k < outs; ++k) {
    auto it = c.values.find(n.output(k));
    if (it == c.values.end()) lowered = c.Error(op_type + " defined no output " + std::to_string(k));
    else results.push_back(it->second);
  }
  for (const std::string& name : names) c.values.erase(name);
  HEXIR_RETURN_IF_ERROR(lowered);
  return results;
}

void SetInt(::onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

Status LowerGraphNodes(Context& c, const ::onnx::GraphProto& g) {
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    c.node = &n;
    HEXIR_RETURN_IF_ERROR(LowerNode(c));
    for (const auto& out : n.output())
      if (!out.empty() && !c.values.count(out)) return c.Error("output '" + out + "' is not supported");
    if (c.on_node) c.on_node(g, i);
  }
  c.node = nullptr;
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
