// Large results through a chunk in L1 and non-temporal vector stores (CPUStreamingStores.h).
#include "passes/codegen/CPUStreamingStores.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "passes/codegen/CPUForLoop.h"
#include "passes/codegen/CPUUnitStride.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// The kernel argument `v` is a view of (through subviews, reshapes and casts), or null.
BlockArgument RootArgument(Value v) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return isa<func::FuncOp>(arg.getOwner()->getParentOp()) ? arg : BlockArgument();
    auto view = v.getDefiningOp<ViewLikeOpInterface>();
    if (!view) return BlockArgument();
    v = view.getViewSource();
  }
}

// Bytes of a statically shaped memref of int or float elements, or 0.
int64_t StaticBytes(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape() || !memref.getElementType().isIntOrFloat()) return 0;
  return memref.getNumElements() * memref.getElementTypeBitWidth() / 8;
}

// The generics CPUStreamingStores.h rewrites (see there).
bool Streams(linalg::GenericOp g, int64_t minBytes, int64_t vectorBytes) {
  if (!g.hasPureBufferSemantics() || g.getNumLoops() == 0 || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops())
    return false;
  OpOperand* init = g.getDpsInitOperand(0);
  if (!g.getMatchingIndexingMap(init).isIdentity() || g.payloadUsesValueFromOperand(init)) return false;
  auto out = dyn_cast<MemRefType>(init->get().getType());
  if (!out || !HasUnitInnerStride(out)) return false;
  Type element = out.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8) return false;
  const int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  if (vectorBytes % elementBytes) return false;
  const int64_t inner = out.getShape().back();
  if (!ShapedType::isDynamic(inner) && inner < 4 * (vectorBytes / elementBytes)) return false;
  BlockArgument root = RootArgument(init->get());
  return root && StaticBytes(root.getType()) >= minBytes;
}

// Index constant.
Value Index(OpBuilder& b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

// After `tile` (a tile of a streamed generic, writing `dest`): `chunk` (a view of the stack
// buffer with dest's sizes) copied to dest, by aligned non-temporal vector stores when dest's
// address and length allow, by memref.copy otherwise.
void EmitChunkCopy(OpBuilder& b, Location loc, Value full, Value chunk, Value dest, int64_t vectorBytes) {
  auto destType = cast<MemRefType>(dest.getType());
  Type element = destType.getElementType();
  const int64_t elementBytes = element.getIntOrFloatBitWidth() / 8, lanes = vectorBytes / elementBytes;
  const int64_t rank = destType.getRank();
  Value length = memref::DimOp::create(b, loc, dest, rank - 1);
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, dest);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, dest);
  Value address = arith::AddIOp::create(
      b, loc, base, arith::MulIOp::create(b, loc, metadata.getOffset(), Index(b, loc, elementBytes)));
  Value zero = Index(b, loc, 0);
  auto isMultiple = [&](Value v, int64_t of) {
    Value rest = arith::RemUIOp::create(b, loc, v, Index(b, loc, of));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rest, zero);
  };
  Value aligned = arith::AndIOp::create(b, loc, isMultiple(address, vectorBytes), isMultiple(length, lanes));
  auto branch = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    auto vectorType = VectorType::get({lanes}, element);
    EmitForLoop(b, loc, zero, length, Index(b, loc, lanes), [&](Value k) {
      SmallVector<Value> indices(rank - 1, zero);
      indices.push_back(k);
      Value v = vector::LoadOp::create(b, loc, vectorType, full, indices);
      vector::StoreOp::create(b, loc, v, dest, indices, /*nontemporal=*/true, llvm::MaybeAlign(vectorBytes));
    });
    b.setInsertionPointToStart(branch.elseBlock());
    memref::CopyOp::create(b, loc, chunk, dest);
  }
}

// Tiles `g` into chunks written through the stack buffer `full` (memref<1x...x1xCxT>).
LogicalResult StreamThroughChunks(RewriterBase& rewriter, linalg::GenericOp g, Value full, int64_t chunkElements,
                                  int64_t vectorBytes) {
  FailureOr<linalg::LinalgOp> tiled = codegen::TileInnermostLoop(rewriter, g, chunkElements);
  if (failed(tiled)) return failure();
  linalg::LinalgOp tile = *tiled;
  OpOperand* init = tile.getDpsInitOperand(0);
  Value dest = init->get();
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  const int64_t rank = cast<MemRefType>(full.getType()).getRank();
  SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)), strides(rank, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> destSizes = memref::getMixedSizes(rewriter, loc, dest);
  Value chunk = memref::SubViewOp::create(rewriter, loc, full, offsets, destSizes, strides);
  rewriter.modifyOpInPlace(tile, [&] { init->set(chunk); });
  rewriter.setInsertionPointAfter(tile);
  EmitChunkCopy(rewriter, loc, full, chunk, dest, vectorBytes);
  return success();
}

}  // namespace

int64_t StreamLargeOutputs(func::FuncOp kernel, int64_t minBytes, int64_t vectorBytes) {
  if (minBytes <= 0 || kernel.getBody().empty()) return 0;
  SmallVector<linalg::GenericOp> generics;
  kernel.walk([&](linalg::GenericOp g) {
    if (Streams(g, minBytes, vectorBytes)) generics.push_back(g);
  });
  IRRewriter rewriter(kernel.getContext());
  int64_t streamed = 0;
  for (linalg::GenericOp g : generics) {
    auto out = cast<MemRefType>(g.getDpsInitOperand(0)->get().getType());
    Type element = out.getElementType();
    const int64_t chunkElements = kStreamingChunkBytes / (element.getIntOrFloatBitWidth() / 8);
    // The chunk buffer, allocated once at the kernel's entry (an alloca in a loop would grow
    // the stack each iteration).
    rewriter.setInsertionPointToStart(&kernel.getBody().front());
    SmallVector<int64_t> shape(out.getRank(), 1);
    shape.back() = chunkElements;
    Value full = memref::AllocaOp::create(rewriter, g.getLoc(), MemRefType::get(shape, element),
                                          rewriter.getI64IntegerAttr(64));
    if (succeeded(StreamThroughChunks(rewriter, g, full, chunkElements, vectorBytes))) ++streamed;
    else rewriter.eraseOp(full.getDefiningOp());
  }
  return streamed;
}

void FenceStreamingStores(LLVM::LLVMFuncOp kernel) {
  kernel.walk([](LLVM::ReturnOp ret) {
    OpBuilder b(ret);
    LLVM::FenceOp::create(b, ret.getLoc(), LLVM::AtomicOrdering::seq_cst);
  });
}

}  // namespace hexir::codegen
