// One lowering function per ONNX op type (and opset range where the semantics changed), by
// the file that defines it, named after ONNX's operator categories. OpTable.cc maps op types
// to them. Each lowers Context::node into Context::values; errors go through Context::Error.
#pragma once

#include "base/status.h"
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

// Math.cc: elementwise arithmetic and unary math.
Status LowerAbs(Context& c);
Status LowerAcos(Context& c);
Status LowerAcosh(Context& c);
Status LowerAdd(Context& c);
Status LowerAsin(Context& c);
Status LowerAsinh(Context& c);
Status LowerAtan(Context& c);
Status LowerAtanh(Context& c);
Status LowerBitShift(Context& c);
Status LowerCeil(Context& c);
Status LowerClipWithAttributes(Context& c);  // opset < 11: min/max attributes
Status LowerClip(Context& c);                // opset >= 11: min/max inputs
Status LowerCos(Context& c);
Status LowerCosh(Context& c);
Status LowerDiv(Context& c);
Status LowerErf(Context& c);
Status LowerExp(Context& c);
Status LowerFloor(Context& c);
Status LowerLog(Context& c);
Status LowerMax(Context& c);
Status LowerMean(Context& c);
Status LowerMin(Context& c);
Status LowerMod(Context& c);
Status LowerMul(Context& c);
Status LowerNeg(Context& c);
Status LowerPow(Context& c);
Status LowerReciprocal(Context& c);
Status LowerRound(Context& c);
Status LowerSign(Context& c);
Status LowerSin(Context& c);
Status LowerSinh(Context& c);
Status LowerSqrt(Context& c);
Status LowerSub(Context& c);
Status LowerSum(Context& c);
Status LowerTan(Context& c);
Status LowerTanh(Context& c);

// MathSignal.cc: DFT STFT MelWeightMatrix.
Status LowerDFT(Context& c);  // opsets 17-19: axis attribute
Status LowerMelWeightMatrix(Context& c);
Status LowerSTFT(Context& c);

// MathTopK.cc: TopK.
Status LowerTopKWithAttribute(Context& c);  // opsets 1-9: k is an attribute
Status LowerTopK(Context& c);               // opset >= 10: k is input 1

// MathActivation.cc: activations and the softmax family.
Status LowerCelu(Context& c);
Status LowerElu(Context& c);
Status LowerHardmax(Context& c);
Status LowerHardSigmoid(Context& c);
Status LowerHardSwish(Context& c);
Status LowerLeakyRelu(Context& c);
Status LowerLogSoftmax(Context& c);
Status LowerPRelu(Context& c);
Status LowerRelu(Context& c);
Status LowerSelu(Context& c);
Status LowerSigmoid(Context& c);
Status LowerSoftmax(Context& c);
Status LowerSoftplus(Context& c);
Status LowerMish(Context& c);
Status LowerGelu(Context& c);
Status LowerSoftsign(Context& c);
Status LowerThresholdedRelu(Context& c);

// MathLoss.cc: losses.
Status LowerNegativeLogLikelihoodLoss(Context& c);
Status LowerSoftmaxCrossEntropyLoss(Context& c);

// MathMatrix.cc: products and scans.
Status LowerEinsum(Context& c);
Status LowerCumSum(Context& c);
Status LowerDet(Context& c);
Status LowerGemm(Context& c);
Status LowerMatMul(Context& c);

// Logical.cc: boolean ops and comparisons.
Status LowerAnd(Context& c);
Status LowerBitwiseAnd(Context& c);
Status LowerBitwiseNot(Context& c);
Status LowerBitwiseOr(Context& c);
Status LowerBitwiseXor(Context& c);
Status LowerEqual(Context& c);
Status LowerGreater(Context& c);
Status LowerGreaterOrEqual(Context& c);
Status LowerLess(Context& c);
Status LowerLessOrEqual(Context& c);
Status LowerNot(Context& c);
Status LowerOr(Context& c);
Status LowerXor(Context& c);

// NN.cc: the small nn ops.
Status LowerDropout(Context& c);
Status LowerFlatten(Context& c);
Status LowerShrink(Context& c);

// NNConv.cc: convolutions.
Status LowerConv(Context& c);
Status LowerConvTranspose(Context& c);
// Conv of x by wt (float or i32) with the node's attributes (group, pads, strides,
// dilations, auto_pad); bias (1-D, along the output channels) may be null.
StatusOr<Val> ConvolutionOf(Context& c, Val& x, Val& wt, Val* bias);

// NNRecurrent.cc: recurrent layers.
Status LowerGRU(Context& c);
Status LowerLSTM(Context& c);
Status LowerRNN(Context& c);

// NNPool.cc: pooling.
Status LowerAveragePool(Context& c);
Status LowerGlobalAveragePool(Context& c);
Status LowerGlobalMaxPool(Context& c);
Status LowerLpPool(Context& c);
Status LowerGlobalLpPool(Context& c);
Status LowerMaxPool(Context& c);
Status LowerMaxUnpool(Context& c);

// NNNormalization.cc: normalizations.
Status LowerBatchNormalization(Context& c);
Status LowerInstanceNormalization(Context& c);
Status LowerLayerNormalization(Context& c);
Status LowerGroupNormalization(Context& c);
Status LowerImageScaler(Context& c);
Status LowerRMSNormalization(Context& c);

// Microsoft.cc: onnxruntime's contrib ops (com.microsoft).
Status LowerBiasGelu(Context& c);
Status LowerFastGelu(Context& c);
Status LowerFusedConv(Context& c);
Status LowerFusedMatMul(Context& c);
Status LowerMatMulNBits(Context& c);
Status LowerMicrosoftGelu(Context& c);
Status LowerQuickGelu(Context& c);
Status LowerSkipLayerNormalization(Context& c);
Status LowerSkipSimplifiedLayerNormalization(Context& c);

// NNAttention.cc: Attention RotaryEmbedding.
Status LowerAttention(Context& c);
Status LowerRotaryEmbedding(Context& c);
Status LowerMicrosoftRotaryEmbedding(Context& c);
Status LowerGroupQueryAttention(Context& c);
Status LowerMultiHeadAttention(Context& c);
Status LowerMicrosoftAttention(Context& c);
Status LowerEmbedLayerNormalization(Context& c);
Status LowerMatMulIntegerToFloat(Context& c);
Status LowerDynamicQuantizeMatMul(Context& c);
Status LowerQLinearAdd(Context& c);
Status LowerQLinearMul(Context& c);
Status LowerQLinearSigmoid(Context& c);
Status LowerQLinearLeakyRelu(Context& c);
Status LowerQLinearGlobalAveragePool(Context& c);
Status LowerQLinearConcat(Context& c);
Status LowerQGemm(Context& c);
Status LowerLpNormalization(Context& c);
Status LowerLRN(Context& c);
Status LowerMeanVarianceNormalization(Context& c);

// Quantization.cc: QDQ and QOperator forms.
Status LowerConvInteger(Context& c);
Status LowerDequantizeLinear(Context& c);
Status LowerDynamicQuantizeLinear(Context& c);
Status LowerMatMulInteger(Context& c);
Status LowerQLinearConv(Context& c);
Status LowerQLinearMatMul(Context& c);
Status LowerQuantizeLinear(Context& c);

// Reduction.cc: reductions and arg-reductions.
Status LowerArgMax(Context& c);
Status LowerArgMin(Context& c);
Status LowerReduceL1(Context& c);
Status LowerReduceL2(Context& c);
Status LowerReduceLogSum(Context& c);
Status LowerReduceLogSumExp(Context& c);
Status LowerReduceMax(Context& c);
Status LowerReduceMean(Context& c);
Status LowerReduceMin(Context& c);
Status LowerReduceProd(Context& c);
Status LowerReduceSum(Context& c);
Status LowerReduceSumSquare(Context& c);

// Tensor.cc: casts, reshapes, permutations, broadcasts and selections.
Status LowerCast(Context& c);
Status LowerCastLike(Context& c);
Status LowerDepthToSpace(Context& c);
Status LowerExpand(Context& c);
Status LowerIdentity(Context& c);
Status LowerIsInf(Context& c);
Status LowerIsNaN(Context& c);
Status LowerReshape(Context& c);
Status LowerReshapeWithAttribute(Context& c);
Status LowerShape(Context& c);
Status LowerSize(Context& c);
Status LowerSpaceToDepth(Context& c);
Status LowerSqueeze(Context& c);
Status LowerTile(Context& c);
Status LowerTranspose(Context& c);
Status LowerUnsqueeze(Context& c);
Status LowerWhere(Context& c);

// ObjectDetection.cc: box selection and pooling over regions.
Status LowerNonMaxSuppression(Context& c);
Status LowerRoiAlign(Context& c);

// TensorCount.cc: outputs whose extent is a count computed on the device.
Status LowerCompress(Context& c);
Status LowerNonZero(Context& c);
Status LowerUnique(Context& c);

// TensorGridSample.cc: AffineGrid GridSample.
Status LowerAffineGrid(Context& c);
Status LowerGridSample(Context& c);

// TensorIndexing.cc: ops that read their source at computed positions.
Status LowerConcat(Context& c);
Status LowerGather(Context& c);
Status LowerGatherElements(Context& c);
Status LowerGatherND(Context& c);
Status LowerOneHot(Context& c);
Status LowerPadWithAttributes(Context& c);  // opset < 11: pads/value attributes
Status LowerCenterCropPad(Context& c);
Status LowerPad(Context& c);                // opset >= 11: pads/value inputs
Status LowerSliceWithAttributes(Context& c);  // opset < 10: starts/ends/axes attributes
Status LowerSlice(Context& c);                // opset >= 10: inputs
Status LowerSplit(Context& c);
Status LowerTrilu(Context& c);
Status LowerReverseSequence(Context& c);

// TensorScatter.cc: scatters.
Status LowerScatter(Context& c);  // opsets 9-10 (ScatterElements without reduction)
Status LowerScatterElements(Context& c);
Status LowerScatterND(Context& c);

// TensorResize.cc: Resize and Upsample.
Status LowerResize(Context& c);
Status LowerUpsample(Context& c);

// NNTfIdfVectorizer.cc: n-gram counts of an integer input.
Status LowerTfIdfVectorizer(Context& c);

// Sequence.cc: sequences and optionals as compile-time lists.
Status LowerConcatFromSequence(Context& c);
Status LowerOptional(Context& c);
Status LowerOptionalGetElement(Context& c);
Status LowerOptionalHasElement(Context& c);
Status LowerSequenceAt(Context& c);
Status LowerSequenceConstruct(Context& c);
Status LowerSequenceEmpty(Context& c);
Status LowerSequenceErase(Context& c);
Status LowerSequenceInsert(Context& c);
Status LowerSequenceLength(Context& c);
Status LowerSequenceMap(Context& c);
Status LowerSplitToSequence(Context& c);

// ControlFlow.cc: subgraph ops.
Status LowerIf(Context& c);
Status LowerLoop(Context& c);
Status LowerScanWithBatch(Context& c);  // opset 8
Status LowerScan(Context& c);  // opset >= 9 (no batch axis, no sequence_lens)

// Generator.cc: values made from attributes and shapes.
Status LowerBlackmanWindow(Context& c);
Status LowerHammingWindow(Context& c);
Status LowerHannWindow(Context& c);
Status LowerConstant(Context& c);
Status LowerConstantOfShape(Context& c);
Status LowerEyeLike(Context& c);
Status LowerRange(Context& c);

// Training.cc: the optimizers of ai.onnx.preview.training.
Status LowerAdagrad(Context& c);
Status LowerAdam(Context& c);
Status LowerMomentum(Context& c);

}  // namespace hexir::importers::onnx
