// Lowers each executable's (distributed) tensor kernel to the NVVM/LLVM dialects inside a
// gpu.module and adds the CUDA dispatch ABI v1 entry: an nvvm.kernel taking one pointer
// per binding then one i32 per push-constant word, which builds the static memref
// descriptors and calls the lowered body (inlined by LLVM: internal, single caller).
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/codegen/CUDABlockLevels.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDADecodeAttention.h"
#include "passes/codegen/CUDAMatmul.h"
#include "passes/codegen/CUDAPasses.h"
#include "passes/codegen/CUDAQuantizedGemv.h"
#include "passes/codegen/CUDARowChains.h"
#include "passes/codegen/CUDAStagedWeights.h"
#include "passes/codegen/CUDAVectorAccess.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/CUDAWholeReductions.h"
#include "passes/codegen/KernelChecks.h"
#include "passes/codegen/KernelLoweringUtils.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/dispatch/InPlaceUpdates.h"  // kTiedOperandsAttr



namespace hexir {
#define GEN_PASS_DEF_CUDALOWEREXECUTABLES
#include "passes/codegen/CUDAPasses.h.inc"

namespace {
using namespace mlir;

using codegen::kBufferizePipeline;
constexpr const char* kLoopsPipeline =
    "builtin.module(convert-linalg-to-loops,lower-affine,canonicalize,cse,convert-scf-to-cf,"
    "expand-strided-metadata,lower-affine)";
// Warp reductions: bytes per lane per load (one 128-bit access), at most this many elements
// per lane and step (CUDAVectorAccess.h), and independent steps (accumulators) in flight per
// lane (8: on the H200 a 4096x4096 bf16 [N][K] GEMV took 10.8 us against 11.8 with 4;
// bench/gemv/README.md).
constexpr int64_t kVectorBytes = cuda::kVectorAccessBytes;
constexpr int64_t kMaxVectorWidth = cuda::kMaxVectorAccessWidth;
constexpr int64_t kUnroll = 8;
// Staged weights of one-block kernels (CUDAStagedWeights.h): the shared memory left to the
// group's reduction partials (a few words a warp each), and the most bytes prefetched into
// L1 (of the 256 KiB an SM shares between L1 and shared memory).
constexpr int64_t kReductionScratchBytes = 4096;
constexpr int64_t kMaxL1StagedBytes = 128 * 1024;
constexpr const char* kNVVMPipeline =
    "builtin.module(gpu.module(convert-gpu-to-nvvm,convert-nvvm-to-llvm,reconcile-unrealized-casts,"
    "canonicalize,cse))";

// Read by hexir-cuda-serialize-executables ("cuda.read_only_bindings.<entry>"): the bindings
// of an executable that no dispatch of the program writes, as array<i64>.
constexpr const char* kReadOnlyBindingsAttr = "hexir.cuda.read_only_bindings";

// Whether the buffer behind a host tensor is never written while the program runs: every
// buffer it may be is an argument of a public function or a constant (followed back through
// reshapes, casts, extract_slice and into the call sites of private callees), and from there
// (forward through the same ops and into callees) it is only read: a dispatch operand tied to
// no result (an in-place update writes its operand), a call operand whose callee only reads
// it, or `tensor.dim`. Any other use (a return: a donated argument; an in-place insert; a
// transfer; a loop-carried value) counts as a possible write. False whenever unsure.
class ReadOnlyTensors {
 public:
  explicit ReadOnlyTensors(ModuleOp module) : module(module), symbols(module) {}

  bool readOnly(Value v, int depth = 0) {
    if (depth > 32) return false;
    if (Operation* def = v.getDefiningOp()) {
      if (isView(def)) return readOnly(def->getOperand(0), depth + 1);
      return matchPattern(v, m_Constant()) && neverWritten(v);
    }
    auto arg = cast<BlockArgument>(v);
    auto func = dyn_cast_or_null<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getBody().front()) return false;
    if (func.isPublic()) return neverWritten(v);
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(func, module);
    if (!uses) return false;
    for (const SymbolTable::SymbolUse& use : *uses) {
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (!call || arg.getArgNumber() >= call.getNumOperands() ||
          !readOnly(call.getOperand(arg.getArgNumber()), depth + 1))
        return false;
    }
    return true;
  }

 private:
  static bool isView(Operation* op) {
    return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp, tensor::ExtractSliceOp>(op);
  }

  bool neverWritten(Value root) {
    auto [it, fresh] = written.try_emplace(root, true);
    if (!fresh) return !it->second;
    SmallVector<Value> work = {root};
    llvm::DenseSet<Value> seen = {root};
    auto push = [&](Value v) {
      if (seen.insert(v).second) work.push_back(v);
    };
    bool onlyRead = true;
    while (!work.empty() && onlyRead) {
      Value v = work.pop_back_val();
      for (OpOperand& use : v.getUses()) {
        Operation* user = use.getOwner();
        if (isView(user) && use.getOperandNumber() == 0) {
          push(user->getResult(0));
        } else if (isa<tensor::DimOp>(user)) {
        } else if (auto dispatch = dyn_cast<DispatchOp>(user)) {
          auto tied = dispatch->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr);
          if (tied && llvm::is_contained(tied.asArrayRef(), int64_t(use.getOperandNumber()))) onlyRead = false;
        } else if (auto call = dyn_cast<func::CallOp>(user)) {
          auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
          if (!callee || callee.isExternal() || callee.isPublic()) onlyRead = false;
          else push(callee.getArgument(use.getOperandNumber()));
        } else {
          onlyRead = false;
        }
        if (!onlyRead) break;
      }
    }
    written[root] = !onlyRead;
    return onlyRead;
  }

  ModuleOp module;
  SymbolTable symbols;
  llvm::DenseMap<Value, bool> written;
};

// A block's slice of a binding, L2-prefetched before the kernel waits for its prerequisites:
// block b in [first, first + blocks) reads bytes [(b - first) * bytes, (b - first + 1) * bytes)
// of binding `binding` (a GEMV's read-only weight rows, whole rows per block, first > 0: a
// sibling projection's range of blocks; or a share of decode attention's KV caches).
struct RowPrefetch {
  int64_t binding, bytes, blocks, first = 0;
};

// A whole binding of `bytes` in equal shares of at most `blocks` blocks: the most blocks that
// split it into 16-byte multiples (the bulk prefetch's unit).
std::optional<RowPrefetch> WholeInShares(int64_t binding, int64_t bytes, int64_t blocks) {
  for (; blocks > 0; --blocks)
    if (bytes % (blocks * 16) == 0) return RowPrefetch{binding, bytes / blocks, blocks};
  return std::nullopt;
}

// Decode attention's K and V caches, whole, in equal shares of the kernel's blocks (the most
// blocks that split them into 16-byte multiples), when each cache is at most `maxBytes`: the
// rows earlier steps wrote stream into L2 while the kernels producing q and this step's rows
// drain (the block's own rows are not known before the wait: the position is a parameter).
// L2 is the device's point of coherence, so a line prefetched while a prerequisite writes
// this step's row holds the written values when the kernel reads it after the wait.
void attentionPrefetches(const cuda::DecodeAttention& shape, ArrayRef<Type> signature, int64_t maxBytes,
                         SmallVector<RowPrefetch>& prefetches) {
  auto cache = dyn_cast<MemRefType>(signature[shape.k]);
  if (!cache || !cache.hasStaticShape() || cache != signature[shape.v]) return;
  const int64_t bytes = cache.getNumElements() * cache.getElementTypeBitWidth() / 8;
  if (bytes > maxBytes) return;
  if (std::optional<RowPrefetch> k = WholeInShares(shape.k, bytes, shape.blocks())) {
    prefetches.push_back(*k);
    prefetches.push_back({shape.v, k->bytes, k->blocks});
  }
}

// The quantized GEMV's read-only weights (W, and its sibling's) of at most `maxBytes` each,
// whole, in equal shares of the grid's blocks: a block's rows are not one range when it takes
// several passes, and the whole weight lands in L2 either way (the grid is one wave). Session
// 23 measured this on TinyLlama q4_0 (0.979x) but saw the greedy ids change, which was
// session 44's ld.global.nc race (buildEntry), not the prefetch.
void quantizedGemvPrefetches(func::FuncOp kernel, const cuda::QuantizedGemv& shape,
                             const llvm::DenseSet<int64_t>& readOnly, int64_t maxBytes,
                             SmallVector<RowPrefetch>& prefetches) {
  for (unsigned arg : cuda::QuantizedGemvWeights(kernel)) {
    auto type = dyn_cast<MemRefType>(kernel.getArgumentTypes()[arg]);
    if (!readOnly.contains(arg) || !type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      continue;
    const int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    if (bytes > maxBytes) continue;
    int64_t binding = 0;
    for (unsigned i = 0; i < arg; ++i) binding += isa<MemRefType>(kernel.getArgumentTypes()[i]);
    if (std::optional<RowPrefetch> share = WholeInShares(binding, bytes, shape.gridBlocks()))
      prefetches.push_back(*share);
  }
}

class CUDALowerExecutables : public impl::CUDALowerExecutablesBase<CUDALowerExecutables> {
 public:
  using CUDALowerExecutablesBase::CUDALowerExecutablesBase;

  void getDependentDialects(DialectRegistry& registry) const override {
    CUDALowerExecutablesBase::getDependentDialects(registry);
    codegen::AddPipelineDialects(registry, {kBufferizePipeline, kLoopsPipeline, kNVVMPipeline});
    registry.insert<vector::VectorDialect>();  // warp reductions' vector loads
    registry.insert<math::MathDialect>();      // the quantized GEMV's fma chains
  }

  void runOnOperation() override {
    std::optional<cuda::WeightStaging> staging = cuda::ParseWeightStaging(weightStaging);
    if (!staging) {
      getOperation().emitError("hexir-cuda-lower-executables: weight-staging '")
          << weightStaging << "' is not one of none, shared, l1";
      return signalPassFailure();
    }
    stagingMode = *staging;
    ReadOnlyTensors tensors(getOperation());
    llvm::StringMap<SmallVector<DispatchOp>> sites;
    getOperation().walk([&](DispatchOp d) { sites[d.getExecutable()].push_back(d); });
    for (auto exe : getOperation().getOps<ExecutableOp>())
      if (exe.isCompiledFor("cuda") && failed(lower(exe, readOnlyBindings(exe, sites[exe.getSymName()], tensors))))
        return signalPassFailure();
  }

 private:
  cuda::WeightStaging stagingMode = cuda::WeightStaging::kShared;

  // The kernel's input tensors (argument j = dispatch operand j = binding j) that are
  // read-only at every dispatch site of the executable (none when it has no sites).
  static llvm::DenseSet<int64_t> readOnlyBindings(ExecutableOp exe, ArrayRef<DispatchOp> sites,
                                                   ReadOnlyTensors& tensors) {
    llvm::DenseSet<int64_t> bindings;
    ModuleOp inner = exe.getInnerModule();
    auto kernel = inner ? inner.lookupSymbol<func::FuncOp>(exe.getSymName()) : func::FuncOp();
    if (!kernel || sites.empty()) return bindings;
    for (unsigned j = 0; j < kernel.getNumArguments(); ++j) {
      if (!isa<RankedTensorType>(kernel.getArgumentTypes()[j])) break;
      bool all = true;
      for (DispatchOp d : sites)
        all = all && j < d.getArgs().size() && d.getArgs()[j].getType() == kernel.getArgumentTypes()[j] &&
              tensors.readOnly(d.getArgs()[j]);
      if (all) bindings.insert(j);
    }
    return bindings;
  }

  // Temporaries are per thread (distribution made them point-sized): device-side malloc
  // would be slow and unsupported by the driver, so they live on the thread's stack.
  static LogicalResult allocationsToStack(func::FuncOp kernel) {
    SmallVector<memref::AllocOp> allocs;
    kernel.walk([&](memref::AllocOp a) { allocs.push_back(a); });
    for (memref::AllocOp a : allocs) {
      if (!a.getType().hasStaticShape())
        return a.emitError("dynamic allocation in a CUDA kernel is not supported");
      OpBuilder b(a);
      auto stack = memref::AllocaOp::create(b, a.getLoc(), a.getType(), ValueRange{},
                                            a.getAlignmentAttr());
      a.replaceAllUsesWith(stack.getResult());
      a.erase();
    }
    SmallVector<memref::DeallocOp> deallocs;
    kernel.walk([&](memref::DeallocOp d) { deallocs.push_back(d); });
    for (memref::DeallocOp d : deallocs) d.erase();
    return success();
  }

  // One warp per output (hexir.cuda.lanes = 32; L = 32 W threads for W warps, one output
  // per block): the reduction op, now on the point (parallel extents 1), becomes
  //   acc[u] = identity (u < U)
  //   for s = 0; s < Ks; s += 32 V U:           // U steps in flight, one accumulator each
  //     for u: x = inputs[s + 32 V u + lane V .. + V]; acc[u] = body(x[V-1], ... body(x[0], acc[u]))
  //   for s = Ks; s < Kc; s += 32 V: likewise into acc[0] (static K: < U steps, unrolled
  //                                      into acc[0], acc[1], ...)
  //   for k = Kc + lane; k < K; k += 32: acc[0] = body(inputs[k], acc[0])   // tail
  //   partial = combine(acc[0], acc[1], ...)
  //   butterfly: partial = combine(partial, shfl.xor(partial, 16, 8, 4, 2, 1))
  //   W > 1: lane 0 of warp w stores shared[w]; barrier; partial = combine(shared[0..W))
  //   lane 0: out = combine(out, partial); then whatever follows the reduction (a fused
  //   elementwise consumer) in the warp's point
  // (Kc = K rounded down to L V, Ks to L V U; "lane" is tid % L, "32" above is L). Each lane reads V contiguous elements
  // per step: an input whose rows are provably aligned to V elements (cuda::RowsAligned) with
  // one vector load (16 bytes for the narrowest type), others with V scalar loads. The
  // loop steps do not depend on the lane, so static trip counts stay static for LLVM.
  // Each lane combines its elements in a different order than a sequential loop, as
  // before; the combiners are associative and commutative.
  // Whole warps pass the thread guard together (thread_count and blocks are multiples of
  // 32), so the full-mask shuffles see all 32 lanes; the shuffles also order every lane's
  // earlier init store before lane 0 reads `out`.
  // Sibling reductions (CUDAWholeReductions.h: w1 and w3 read by SiLU * mul) are lowered
  // one after the other in this form; only what follows the last runs in lane 0 alone (lane
  // 0 holds every sibling's result).
  // `prefetches` (null: none wanted) collects the rows of read-only weights that each block
  // reads whole (`outputs` in all, `perBlock` consecutive ones a block).
  static LogicalResult warpReduce(func::FuncOp kernel, int64_t lanes, const llvm::DenseSet<int64_t>& readOnly,
                                  int64_t outputs, int64_t perBlock, int64_t maxBytes,
                                  SmallVector<RowPrefetch>* prefetches) {
    const cuda::KernelReduction found = cuda::SoleKernelReduction(kernel);
    SmallVector<linalg::LinalgOp> ops;
    if (found.combiner) {
      ops.push_back(found.op);
    } else {
      cuda::KernelReductions split = cuda::SplitKernelReductions(kernel);
      if (!split.point || split.siblings.empty() || !split.whole.empty())
        return kernel.emitError("internal: warp-reduction kernel without a reducible op");
      ops.push_back(split.point);
      ops.append(split.siblings.begin(), split.siblings.end());
    }
    // Sibling projections (cuda::kSiblingProjectionsGroup) hold their reductions in
    // different branches: what follows each branch's last one runs in lane 0.
    SmallVector<scf::IfOp> lastInBlock;
    // Their blocks are partitioned per projection (cuda::kSiblingBlocksAttr: reduction i,
    // in kernel order, is chain i): block b of chain i reduces its rows (b - first_i) P ..
    // (b - first_i) P + P - 1, prefetched when the chain's blocks are whole.
    const bool partitioned =
        llvm::any_of(ops, [&](linalg::LinalgOp op) { return op->getBlock() != ops.front()->getBlock(); });
    auto chains = kernel->getAttrOfType<DenseI64ArrayAttr>(cuda::kSiblingBlocksAttr);
    if (partitioned && (!chains || chains.size() != 2 * (int64_t)ops.size())) prefetches = nullptr;
    for (auto [i, op] : llvm::enumerate(ops)) {
      Operation* combiner = cuda::WarpReducibleCombiner(op);
      if (!combiner) return op.emitError("internal: sibling reduction is not warp-reducible");
      const int64_t first = partitioned ? chains[2 * i] : 0, rows = partitioned ? chains[2 * i + 1] : outputs;
      if (prefetches && rows % perBlock == 0)
        for (OpOperand* in : op.getDpsInputOperands())
          if (std::optional<RowPrefetch> row = weightRow(kernel, in->get(), readOnly, rows, perBlock, maxBytes);
              row && llvm::none_of(*prefetches, [&](const RowPrefetch& p) { return p.binding == row->binding; })) {
            row->first = first;
            prefetches->push_back(*row);
          }
      bool lastOfBlock = llvm::none_of(llvm::drop_begin(ops, i + 1), [&](linalg::LinalgOp later) {
        return later->getBlock() == op->getBlock();
      });
      FailureOr<scf::IfOp> ifFirst = warpReduceOne(kernel, op, combiner, lanes);
      if (failed(ifFirst)) return failure();
      if (lastOfBlock) lastInBlock.push_back(*ifFirst);
    }
    for (scf::IfOp ifFirst : lastInBlock) onFirstLane(ifFirst);
    return success();
  }

  // The rows of a read-only [outputs][K] binding of at most `maxBytes` that a block reduces (a
  // subview [i, 0] [1, K] of the kernel argument, identity layout: block b reduces rows b P ..
  // b P + P - 1 for P = perBlock), in 16-byte multiples (what the bulk prefetch takes); else
  // nothing. The bound: on the H200 a prefetch paid where the whole weight lands in L2 while
  // the predecessor drains (random768's 1.2-3.1 MB GEMVs: decode 0.898x with prefetches), and
  // cost its issue time where it cannot (TinyLlama's 46 MB w1/w3 alone 14.0 -> 17.8 us, the
  // 131 MB classifier 32.6 -> 37.8: decode 1.088x against 0.977x without prefetches).
  static std::optional<RowPrefetch> weightRow(func::FuncOp kernel, Value input, const llvm::DenseSet<int64_t>& readOnly,
                                              int64_t outputs, int64_t perBlock, int64_t maxBytes) {
    auto view = input.getDefiningOp<memref::SubViewOp>();
    if (!view) return std::nullopt;
    auto arg = dyn_cast<BlockArgument>(view.getSource());
    if (!arg || arg.getOwner() != &kernel.getBody().front() || !readOnly.contains(arg.getArgNumber()))
      return std::nullopt;
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || type.getRank() != 2 || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getDimSize(0) != outputs || !type.getElementType().isIntOrFloat())
      return std::nullopt;
    if (view.getStaticSizes() != ArrayRef<int64_t>{1, type.getDimSize(1)} ||
        view.getStaticStrides() != ArrayRef<int64_t>{1, 1} || view.getStaticOffsets().back() != 0)
      return std::nullopt;
    int64_t bits = type.getElementType().getIntOrFloatBitWidth();
    if ((type.getDimSize(1) * bits) % (8 * 16) != 0 || type.getNumElements() * bits / 8 > maxBytes)
      return std::nullopt;
    int64_t binding = 0;
    for (unsigned i = 0; i < arg.getArgNumber(); ++i) binding += isa<MemRefType>(kernel.getArgumentTypes()[i]);
    return RowPrefetch{binding, perBlock * type.getDimSize(1) * bits / 8, outputs / perBlock};
  }

  // One reduction of the form above; returns its `if lane == 0` (the store of the result).
  static FailureOr<scf::IfOp> warpReduceOne(func::FuncOp kernel, linalg::LinalgOp op,
                                            Operation* combiner, int64_t lanes) {
    if (!op.hasPureBufferSemantics()) {
      op.emitError("internal: reduction not bufferized");
      return failure();
    }
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Range> ranges = op.createLoopRanges(b, loc);
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    int64_t reduced = -1;
    for (auto [d, it] : llvm::enumerate(iterators)) {
      if (it == utils::IteratorType::reduction) {
        reduced = d;
      } else if (getConstantIntValue(ranges[d].size) != 1) {
        op.emitError("internal: warp reduction over more than one point");
        return failure();
      }
    }
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value lane = arith::RemUIOp::create(b, loc, tid, arith::ConstantIndexOp::create(b, loc, lanes));
    TypedAttr neutral = *arith::getNeutralElement(combiner);
    Block* body = op.getBlock();
    BlockArgument acc = body->getArgument(op.getNumDpsInputs());
    auto indicesAt = [&](OpBuilder& nb, AffineMap map, ArrayRef<Value> dims) {
      return codegen::IndicesAt(nb, loc, map, dims);
    };
    auto load = [&](OpBuilder& nb, OpOperand* operand, ArrayRef<Value> dims) -> Value {
      return memref::LoadOp::create(nb, loc, operand->get(),
                                    indicesAt(nb, op.getMatchingIndexingMap(operand), dims));
    };
    auto combine = [&](OpBuilder& nb, Value accValue, Value other) -> Value {
      IRMapping m;
      Value otherOperand = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                          : combiner->getOperand(0);
      m.map(acc, accValue);
      m.map(otherOperand, other);
      return nb.clone(*combiner, m)->getResult(0);
    };

    // Vector width V: 16 bytes of the narrowest input read along k, halved until some such
    // input's rows are aligned to it (1: scalar loads only).
    SmallVector<OpOperand*> inputs = op.getDpsInputOperands();
    SmallVector<bool> alongK;
    int64_t narrowest = 0;
    for (OpOperand* in : inputs) {
      alongK.push_back(op.getMatchingIndexingMap(in).isFunctionOfDim(reduced));
      int64_t bits = getElementTypeOrSelf(in->get().getType()).getIntOrFloatBitWidth();
      if (alongK.back() && bits % 8 == 0)
        narrowest = narrowest ? std::min(narrowest, bits / 8) : bits / 8;
    }
    int64_t width = narrowest ? std::min<int64_t>(kMaxVectorWidth, kVectorBytes / narrowest) : 1;
    SmallVector<bool> vectorized(inputs.size(), false);
    for (; width > 1; width /= 2) {
      bool any = false;
      for (auto [i, in] : llvm::enumerate(inputs))
        any |= vectorized[i] = alongK[i] && cuda::RowsAligned(in->get(), width);
      if (any) break;
    }

    // Loads of one step (`w` elements from k on), then its `w` body applications.
    using Loaded = SmallVector<SmallVector<Value>>;  // [input][element]
    auto loadStep = [&](OpBuilder& nb, Value k, int64_t w) -> Loaded {
      Loaded loaded(inputs.size());
      SmallVector<Value> dims(iterators.size(), zero);
      dims[reduced] = k;
      for (auto [i, in] : llvm::enumerate(inputs)) {
        Type element = getElementTypeOrSelf(in->get().getType());
        if (!alongK[i]) {
          loaded[i].assign(w, load(nb, in, dims));
        } else if (w > 1 && vectorized[i]) {
          int64_t bytes = std::min<int64_t>(kVectorBytes, w * element.getIntOrFloatBitWidth() / 8);
          Value v = vector::LoadOp::create(
              nb, loc, VectorType::get({w}, element), in->get(),
              indicesAt(nb, op.getMatchingIndexingMap(in), dims), /*nontemporal=*/false,
              llvm::MaybeAlign(bytes));
          for (int64_t j = 0; j < w; ++j)
            loaded[i].push_back(vector::ExtractOp::create(nb, loc, v, j));
        } else {
          for (int64_t j = 0; j < w; ++j) {
            dims[reduced] = arith::AddIOp::create(nb, loc, k, arith::ConstantIndexOp::create(nb, loc, j));
            loaded[i].push_back(load(nb, in, dims));
          }
          dims[reduced] = k;
        }
      }
      return loaded;
    };
    auto computeStep = [&](OpBuilder& nb, Value k, const Loaded& loaded, int64_t w,
                           Value accValue) -> Value {
      for (int64_t j = 0; j < w; ++j) {
        IRMapping m;
        for (auto [i, in] : llvm::enumerate(inputs))
          m.map(body->getArgument(in->getOperandNumber()), loaded[i][j]);
        m.map(acc, accValue);
        for (Operation& inner : body->without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            Value at = zero;
            if ((int64_t)index.getDim() == reduced)
              at = j == 0 ? k
                          : arith::AddIOp::create(nb, loc, k, arith::ConstantIndexOp::create(nb, loc, j))
                                .getResult();
            m.map(index.getResult(), at);
            continue;
          }
          nb.clone(inner, m);
        }
        accValue = m.lookupOrDefault(body->getTerminator()->getOperand(0));
      }
      return accValue;
    };

    Value extent = getValueOrCreateConstantIndexOp(b, loc, ranges[reduced].size);
    auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    auto roundDown = [&](int64_t multiple) -> Value {
      Value rem = b.createOrFold<arith::RemUIOp>(loc, extent, index(multiple));
      return b.createOrFold<arith::SubIOp>(loc, extent, rem);
    };
    int64_t chunk = lanes * width, super = chunk * kUnroll;
    Value laneOffset = b.createOrFold<arith::MulIOp>(loc, lane, index(width));
    Value superEnd = roundDown(super), chunkEnd = roundDown(chunk);
    SmallVector<Value> identities;
    for (int64_t u = 0; u < kUnroll; ++u)
      identities.push_back(arith::ConstantOp::create(b, loc, neutral));
    auto unrolled = scf::ForOp::create(
        b, loc, zero, superEnd, index(super), identities,
        [&](OpBuilder& nb, Location l, Value s, ValueRange accs) {
          SmallVector<Value> ks;
          SmallVector<Loaded> loaded;
          for (int64_t u = 0; u < kUnroll; ++u) {
            Value base = arith::AddIOp::create(nb, l, s, arith::ConstantIndexOp::create(nb, l, u * chunk));
            ks.push_back(arith::AddIOp::create(nb, l, base, laneOffset));
            loaded.push_back(loadStep(nb, ks.back(), width));
          }
          SmallVector<Value> next;
          for (int64_t u = 0; u < kUnroll; ++u)
            next.push_back(computeStep(nb, ks[u], loaded[u], width, accs[u]));
          scf::YieldOp::create(nb, l, next);
        });
    auto single = [&](Value from, Value to, Value offset, int64_t stepSize, int64_t w, Value init) {
      return scf::ForOp::create(
                 b, loc, from, to, index(stepSize), ValueRange{init},
                 [&](OpBuilder& nb, Location l, Value s, ValueRange accs) {
                   Value k = arith::AddIOp::create(nb, l, s, offset);
                   Loaded loaded = loadStep(nb, k, w);
                   scf::YieldOp::create(nb, l, computeStep(nb, k, loaded, w, accs[0]));
                 })
          .getResult(0);
    };
    SmallVector<Value> accs(unrolled.getResults());
    std::optional<int64_t> from = getConstantIntValue(superEnd), to = getConstantIntValue(chunkEnd);
    if (from && to) {  // static: the (< U) remaining steps unrolled here, loads first
      SmallVector<Value> ks;
      SmallVector<Loaded> loaded;
      for (int64_t s = *from; s < *to; s += chunk) {
        ks.push_back(arith::AddIOp::create(b, loc, index(s), laneOffset));
        loaded.push_back(loadStep(b, ks.back(), width));
      }
      for (auto [u, k] : llvm::enumerate(ks)) accs[u] = computeStep(b, k, loaded[u], width, accs[u]);
    } else {
      accs[0] = single(superEnd, chunkEnd, laneOffset, chunk, width, accs[0]);
    }
    // The tail's bound is on the lane's own k (the steps above end within Kc for every lane).
    // Static and a whole number n (< V) of elements per lane: unrolled, its n loads issued
    // before the first use (a loop waits out one load's latency per element: TinyLlama's w2,
    // K = 5632, had 4 such round trips per thread); the same order of accumulation.
    std::optional<int64_t> whole = getConstantIntValue(extent);
    if (whole && to && (*whole - *to) % lanes == 0) {
      SmallVector<Value> ks;
      SmallVector<Loaded> loaded;
      for (int64_t k = *to; k < *whole; k += lanes) {
        ks.push_back(arith::AddIOp::create(b, loc, index(k), lane));
        loaded.push_back(loadStep(b, ks.back(), 1));
      }
      for (auto [j, k] : llvm::enumerate(ks)) accs[0] = computeStep(b, k, loaded[j], 1, accs[0]);
    } else {
      Value tailStart = arith::AddIOp::create(b, loc, chunkEnd, lane);
      accs[0] = single(tailStart, extent, zero, lanes, 1, accs[0]);
    }
    Value partial = accs[0];
    for (int64_t u = 1; u < kUnroll; ++u) partial = combine(b, partial, accs[u]);

    partial = cuda::XorButterfly(b, loc, partial, cuda::kWarpSize, [&](Value x, Value y) { return combine(b, x, y); });
    if (lanes > cuda::kWarpSize) {  // one output per block: warps meet in shared memory
      int64_t warps = lanes / cuda::kWarpSize;
      Value shared = cuda::WorkgroupArray(b, loc, kernel, partial.getType(), warps);
      Value warpLane = arith::RemUIOp::create(b, loc, tid, index(cuda::kWarpSize));
      auto ifLeader = scf::IfOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warpLane, zero), false);
      OpBuilder lb = OpBuilder::atBlockTerminator(ifLeader.thenBlock());
      memref::StoreOp::create(lb, loc, partial, shared,
                              ValueRange{arith::DivUIOp::create(lb, loc, tid, index(cuda::kWarpSize))});
      gpu::BarrierOp::create(b, loc);
      partial = memref::LoadOp::create(b, loc, shared, ValueRange{zero});
      for (int64_t w = 1; w < warps; ++w)
        partial = combine(b, partial, memref::LoadOp::create(b, loc, shared, ValueRange{index(w)}));
    }
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    OpBuilder tb = OpBuilder::atBlockTerminator(ifFirst.thenBlock());
    SmallVector<Value> dims(iterators.size(), zero);
    OpOperand* out = op.getDpsInitOperand(0);
    Value result = combine(tb, load(tb, out, dims), partial);
    memref::StoreOp::create(tb, loc, result, out->get(),
                            indicesAt(tb, op.getMatchingIndexingMap(out), dims));
    op->erase();
    return ifFirst;
  }

  // What follows the reduction in its block (a fused consumer of the warp's point) runs in
  // lane 0 only, when nothing after the block's terminator needs its values.
  static void onFirstLane(scf::IfOp ifFirst) {
    Block* block = ifFirst->getBlock();
    SmallVector<Operation*> tail;
    for (Operation* o = ifFirst->getNextNode(); o && o != block->getTerminator(); o = o->getNextNode())
      tail.push_back(o);
    llvm::SmallPtrSet<Operation*, 16> inTail(tail.begin(), tail.end());
    for (Operation* o : tail)
      for (Operation* user : o->getUsers())
        if (!inTail.contains(block->findAncestorOpInBlock(*user))) return;
    for (Operation* o : tail) o->moveBefore(ifFirst.thenBlock()->getTerminator());
  }

  // A thread computing a 1 x 4 strip of a matmul should walk k once for the strip, not once
  // per output: LLVM then keeps the strip in registers and reads B's row segment as one
  // 16-byte load. (Other ops keep their order: one point has extent 1 there.)
  static LogicalResult reductionsOutside(func::FuncOp kernel) {
    return codegen::MoveReductionsOutsideLastParallel(
        kernel, [](linalg::LinalgOp op, int64_t last) {
          return op.getNumDpsInits() == 1 && op.getStaticLoopRanges()[last] != 1;
        });
  }

  // Threads past the last point (the grid rounds up to whole blocks) do nothing.
  static void guardThreads(func::FuncOp kernel, int64_t points, int64_t block) {
    Block& body = kernel.getBody().front();
    Operation* ret = body.getTerminator();
    OpBuilder b(kernel.getContext());
    b.setInsertionPointToStart(&body);
    Location loc = kernel.getLoc();
    Type i32 = b.getI32Type();
    Value tid = arith::IndexCastUIOp::create(b, loc, i32, gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
    Value bid = arith::IndexCastUIOp::create(b, loc, i32, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x));
    Value gid = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, bid, arith::ConstantIntOp::create(b, loc, i32, block)),
        tid);
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, gid,
                                          arith::ConstantIntOp::create(b, loc, i32, points));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    Block* then = guard.thenBlock();
    Operation* firstMoved = guard->getNextNode();
    while (firstMoved != ret) {
      Operation* next = firstMoved->getNextNode();
      firstMoved->moveBefore(then->getTerminator());
      firstMoved = next;
    }
  }

  LogicalResult lower(ExecutableOp exe, const llvm::DenseSet<int64_t>& readOnly) {
    MLIRContext* ctx = &getContext();
    ModuleOp inner = exe.getInnerModule();
    if (!inner) return exe.emitError("executable has no module");
    auto kernel = inner.lookupSymbol<func::FuncOp>(exe.getSymName());
    if (!kernel) return exe.emitError("executable has no kernel named like it");
    auto pointsAttr = kernel->getAttrOfType<IntegerAttr>(kThreadCountAttr);
    auto blockAttr = kernel->getAttrOfType<IntegerAttr>(kBlockSizeAttr);
    if (!pointsAttr || !blockAttr)
      return kernel.emitError("kernel was not distributed (run hexir-cuda-distribute-threads)");
    int64_t points = pointsAttr.getInt(), block = blockAttr.getInt();

    FailureOr<OpPassManager> bufferize = parsePassPipeline(kBufferizePipeline);
    FailureOr<OpPassManager> loops = parsePassPipeline(kLoopsPipeline);
    FailureOr<OpPassManager> nvvm = parsePassPipeline(kNVVMPipeline);
    if (failed(bufferize) || failed(loops) || failed(nvvm))
      return exe.emitError("bad internal pipeline");
    // Data-dependent indices and integer divisors are clamped (no illegal address, no fault)
    // and reported through the dispatch's status record (passes/README.md "Checks in kernels").
    codegen::InsertKernelChecks(kernel, /*report=*/true, /*workgroupId=*/Value());
    if (failed(runPipeline(*bufferize, inner))) return failure();
    FailureOr<func::FuncOp> bufferized = codegen::FinishBufferizedKernel(exe);
    if (failed(bufferized)) return failure();
    kernel = *bufferized;
    SmallVector<Type> signature(kernel.getArgumentTypes());
    SmallVector<RowPrefetch> prefetches;
    if (!readOnly.empty()) {
      SmallVector<int64_t> sorted(readOnly.begin(), readOnly.end());
      llvm::sort(sorted);
      exe->setAttr(kReadOnlyBindingsAttr, DenseI64ArrayAttr::get(ctx, sorted));
    }
    int64_t cluster = 1, minBlocks = 0, sharedBytes = 0;
    std::string targetChip = chip;
    if (auto words = kernel->getAttrOfType<DenseI64ArrayAttr>(cuda::kDecodeAttentionAttr)) {
      std::optional<cuda::DecodeAttention> shape = cuda::DecodeAttention::decode(words.asArrayRef());
      if (!shape || failed(cuda::LowerDecodeAttention(kernel, *shape))) return failure();
      cluster = shape->splits;
      kernel->removeAttr(cuda::kDecodeAttentionAttr);
      if (!shape->prompt) attentionPrefetches(*shape, signature, prefetchMaxBytes, prefetches);
    }
    if (auto words = kernel->getAttrOfType<DenseI64ArrayAttr>(cuda::kTensorCoreMatmulAttr)) {
      std::optional<cuda::TensorCoreMatmul> shape = cuda::TensorCoreMatmul::decode(words.asArrayRef());
      if (!shape || failed(cuda::LowerTensorCoreMatmul(kernel, *shape))) return failure();
      minBlocks = shape->minBlocksPerSM();
      cluster = shape->splits;  // split K: the blocks of one output tile form a cluster
      if (shape->wgmma) {
        sharedBytes = shape->sharedBytes();
        targetChip = cuda::kWgmmaChip;
      }
      kernel->removeAttr(cuda::kTensorCoreMatmulAttr);
    }
    if (auto words = kernel->getAttrOfType<DenseI64ArrayAttr>(cuda::kQuantizedGemvAttr)) {
      std::optional<cuda::QuantizedGemv> shape = cuda::QuantizedGemv::decode(words.asArrayRef());
      if (!shape) return kernel.emitError("internal: malformed ") << cuda::kQuantizedGemvAttr;
      quantizedGemvPrefetches(kernel, *shape, readOnly, prefetchMaxBytes, prefetches);
      if (failed(cuda::LowerQuantizedGemv(kernel, *shape))) return failure();
      kernel->removeAttr(cuda::kQuantizedGemvAttr);
    }
    SmallVector<cuda::StagedWeight> staged;
    if (kernel->hasAttr(cuda::kBlockLevelsAttr)) {  // a small layer's group or a row chain's row
      // Its read-only weights fetched while the prerequisite kernels run (CUDAStagedWeights.h):
      // in shared memory, what the group's temporaries and reduction partials leave. A row
      // chain's block reads one row of its inputs: nothing to stage.
      if (stagingMode != cuda::WeightStaging::kNone && SupportsGridDependencyControl(exe) &&
          !cuda::IsRowChainGroup(exe)) {
        const int64_t budget = stagingMode == cuda::WeightStaging::kShared
                                   ? cuda::kMaxBlockSharedBytes - cuda::TopLevelAllocationBytes(kernel) -
                                         kReductionScratchBytes
                                   : kMaxL1StagedBytes;
        staged = cuda::StageWeights(kernel, readOnly, stagingMode, budget, &sharedBytes);
      }
      auto vector = kernel->getAttrOfType<IntegerAttr>(cuda::kBlockLevelsVectorAttr);
      if (failed(cuda::LowerBlockLevels(kernel, block, vector ? vector.getInt() : 1))) return failure();
      kernel->removeAttr(cuda::kBlockLevelsAttr);
      kernel->removeAttr(cuda::kBlockLevelsVectorAttr);
    }
    if (failed(allocationsToStack(kernel))) return failure();
    if (auto lanes = kernel->getAttrOfType<IntegerAttr>(kLanesAttr)) {
      // A recomputed norm's sum first (CUDAWholeReductions.h): then the point's reduction is
      // the kernel's only one.
      if (failed(cuda::LowerWholeReductionsPerWarp(kernel))) return failure();
      // Whole blocks of outputs (block / lanes each): their weight rows are prefetched before
      // the wait (buildEntry).
      const int64_t width = lanes.getInt();
      const bool partitioned = kernel->hasAttr(cuda::kSiblingBlocksAttr);  // whole blocks per chain
      const bool wholeBlocks = (partitioned || (points > 0 && points % block == 0)) && block % width == 0;
      if (failed(warpReduce(kernel, width, readOnly, points / width, block / width, prefetchMaxBytes,
                            wholeBlocks ? &prefetches : nullptr)))
        return failure();
      kernel->removeAttr(kLanesAttr);
      kernel->removeAttr(cuda::kSiblingBlocksAttr);
    }
    if (auto column = kernel->getAttrOfType<DenseI64ArrayAttr>(kColumnTilingAttr)) {
      if (column.size() != 4) return kernel.emitError("internal: malformed ") << kColumnTilingAttr;
      cuda::ColumnTiling tiling{column[0], column[1], column[2], column[3]};
      if (tiling.threads() != block)  // the kernel combines one tile per block
        return kernel.emitError("internal: a column tile of ")
               << tiling.threads() << " threads in blocks of " << block;
      if (failed(cuda::LowerColumnReduction(kernel, tiling))) return failure();
      kernel->removeAttr(kColumnTilingAttr);
    }
    if (failed(reductionsOutside(kernel))) return failure();
    if (points >= 0) guardThreads(kernel, points, block);  // < 0: a grid-stride loop bounds it
    if (failed(runPipeline(*loops, inner))) return failure();

    // The kernel body moves into a gpu.module carrying the NVVM target.
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(inner.getBody());
    auto target = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", targetChip,
                                            features);
    // Read by hexir-cuda-serialize-executables: ptxas -arch, the dynamic shared memory.
    if (targetChip != chip) exe->setAttr(kExecutableChipAttr, b.getStringAttr(targetChip));
    if (sharedBytes > 0) exe->setAttr(kSharedBytesAttr, b.getI64IntegerAttr(sharedBytes));
    auto gpuModule = gpu::GPUModuleOp::create(b, exe.getLoc(), exe.getSymName(),
                                              b.getArrayAttr({target}));
    kernel->moveBefore(gpuModule.getBody(), gpuModule.getBody()->end());
    for (auto shared : llvm::to_vector(inner.getOps<memref::GlobalOp>()))  // WorkgroupArray
      shared->moveBefore(kernel);
    if (Operation* report = inner.lookupSymbol(codegen::kKernelErrorFunction))
      report->moveBefore(gpuModule.getBody(), gpuModule.getBody()->begin());
    kernel->removeAttr(kThreadCountAttr);
    kernel->removeAttr(kBlockSizeAttr);
    if (failed(runPipeline(*nvvm, inner))) return failure();
    if (!SupportsGridDependencyControl(exe)) prefetches.clear();  // nothing to overlap
    return buildEntry(exe, gpuModule, signature, block, cluster, minBlocks, prefetches, staged);
  }

  // griddepcontrol needs sm_90 or later: the executable's own chip (the wgmma kernel's
  // sm_90a) or the pass's.
  bool SupportsGridDependencyControl(ExecutableOp exe) {
    StringRef target = chip;
    if (auto own = exe->getAttrOfType<StringAttr>(kExecutableChipAttr)) target = own.getValue();
    unsigned number = 0;
    return target.consume_front("sm_") && !target.consumeInteger(10, number) && number >= 90;
  }

  // In the entry block, when every slice starts at block 0 over the same blocks (one weight,
  // or w1 and w3): `if (tid.x == 0 && ctaid.x < blocks) prefetch each slice`; otherwise (merged
  // sibling projections, a range of blocks a slice): `if (tid.x == 0) for each slice: if
  // (ctaid.x - first <u blocks) prefetch it`. The builder is left at the start of the block
  // where the entry continues.
  static void prefetchRows(OpBuilder& b, Location loc, LLVM::LLVMFuncOp entry,
                             ArrayRef<RowPrefetch> prefetches) {
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    auto constant = [&](Type t, int64_t v) { return LLVM::ConstantOp::create(b, loc, t, v).getResult(); };
    auto global = LLVM::LLVMPointerType::get(b.getContext(), 1);
    Block* first = b.getInsertionBlock();
    Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
    Value bid = NVVM::BlockIdXOp::create(b, loc, i32);
    auto issue = [&](const RowPrefetch& p, Value row64) {  // the slice's row of blocks, as i64
      Value offset = LLVM::MulOp::create(b, loc, row64, constant(i64, p.bytes));
      Value at = LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), b.getI8Type(),
                                     first->getArgument(p.binding), ArrayRef<LLVM::GEPArg>{offset});
      NVVM::CpAsyncBulkPrefetchOp::create(b, loc, LLVM::AddrSpaceCastOp::create(b, loc, global, at),
                                          constant(i32, p.bytes), Value());
    };
    const bool uniform = llvm::all_of(prefetches, [&](const RowPrefetch& p) {
      return p.first == 0 && p.blocks == prefetches.front().blocks;
    });
    if (uniform) {
      Value cond = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid, constant(i32, 0));
      cond = LLVM::AndOp::create(b, loc, cond,
                                 LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, bid,
                                                      constant(i32, prefetches.front().blocks)));
      Block* block = b.createBlock(&entry.getBody());
      Block* rest = b.createBlock(&entry.getBody());
      b.setInsertionPointToEnd(first);
      LLVM::CondBrOp::create(b, loc, cond, block, rest);
      b.setInsertionPointToStart(block);
      Value row64 = LLVM::ZExtOp::create(b, loc, i64, bid);
      for (const RowPrefetch& p : prefetches) issue(p, row64);
      LLVM::BrOp::create(b, loc, rest);
      b.setInsertionPointToStart(rest);
      return;
    }
    Block* rest = b.createBlock(&entry.getBody());
    Block* next = b.createBlock(rest);
    b.setInsertionPointToEnd(first);
    LLVM::CondBrOp::create(b, loc, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid, constant(i32, 0)),
                           next, rest);
    for (const RowPrefetch& p : prefetches) {
      b.setInsertionPointToStart(next);
      Value row = LLVM::SubOp::create(b, loc, bid, constant(i32, p.first));
      Value mine = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, row, constant(i32, p.blocks));
      Block* block = b.createBlock(rest);
      Block* after = b.createBlock(rest);
      b.setInsertionPointToEnd(next);
      LLVM::CondBrOp::create(b, loc, mine, block, after);
      b.setInsertionPointToStart(block);
      issue(p, LLVM::ZExtOp::create(b, loc, i64, row));
      LLVM::BrOp::create(b, loc, after);
      next = after;
    }
    b.setInsertionPointToStart(next);
    LLVM::BrOp::create(b, loc, rest);
    b.setInsertionPointToStart(rest);
  }

  // extern "C" __global__ void <name>(void* binding0, ..., [void* params]): memref argument
  // i is binding i; everything that varies per call (dynamic dims of the memrefs in argument
  // order, then scalars in order) is one i64 word each of a parameter buffer bound after
  // the memrefs, present only when there is such a value. Same layout as the CPU ABI
  // (passes/codegen/CPULowerExecutables.cpp), so the host program is target-independent.
  // No push constants are used (ABI v1 would append them as uint32_t after the bindings).
  // `cluster` > 1: blocks run in clusters of that many along x (`.reqnctapercluster`).
  // `minBlocks` > 0: registers are capped so that many blocks fit an SM (`.minnctapersm`).
  LogicalResult buildEntry(ExecutableOp exe, gpu::GPUModuleOp gpuModule, ArrayRef<Type> signature,
                           int64_t block, int64_t cluster, int64_t minBlocks,
                           ArrayRef<RowPrefetch> prefetches, ArrayRef<cuda::StagedWeight> staged) {
    MLIRContext* ctx = &getContext();
    auto impl = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(exe.getSymName());
    if (!impl) return exe.emitError("lowered kernel not found");
    // convert-func-to-llvm may add a C-interface wrapper; the ABI entry replaces it.
    for (auto f : llvm::to_vector(gpuModule.getOps<LLVM::LLVMFuncOp>()))
      if (f.getSymName().starts_with("_mlir_ciface_")) f.erase();
    impl->removeAttr("llvm.emit_c_interface");
    bool hasParams = false;
    int64_t memrefCount = codegen::PrepareLoweredKernel(impl, signature, &hasParams);
    // Inlined into the entry even when large (sibling reductions: two unrolled dots), so that
    // its loads see the entry's noalias arguments (ld.global.nc of read-only bindings) and
    // its temporaries registers.
    impl.setAlwaysInline(true);
    bool reportsErrors =
        codegen::LowerKernelErrorCalls(gpuModule, impl, codegen::ErrorRecord::kDispatchStatus);

    auto ptr = LLVM::LLVMPointerType::get(ctx);
    OpBuilder b(ctx);
    Type i64 = b.getI64Type();
    // ABI v1's optional trailing 8-byte parameter: the dispatch's status record.
    SmallVector<Type> params(memrefCount + (hasParams ? 1 : 0) + (reportsErrors ? 1 : 0), ptr);
    b.setInsertionPointToEnd(gpuModule.getBody());
    Location loc = exe.getLoc();
    auto entry = LLVM::LLVMFuncOp::create(b, loc, exe.getSymName(),
                                          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
    entry->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
    entry->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                   b.getDenseI32ArrayAttr({(int32_t)block, 1, 1}));
    if (cluster > 1)
      entry->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                     b.getDenseI32ArrayAttr({(int32_t)cluster, 1, 1}));
    if (minBlocks > 0)
      entry->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), b.getI32IntegerAttr(minBlocks));
    // Binding pointers are 64-byte aligned (hal/drivers/cuda/README.md); 16 is what the
    // load/store vectorizer needs for 128-bit accesses. A noalias argument the kernel only
    // reads is loaded through the non-coherent path (NVPTX tags its loads invariant:
    // ld.global.nc), which PTX allows only for memory that stays read-only for the kernel's
    // whole lifetime. Under programmatic launch the kernel starts while its prerequisites
    // still run and write, so only a binding that no dispatch of the program writes
    // (kReadOnlyBindingsAttr) keeps noalias on the entry; the others are read coherently
    // after the wait (session 44: ld.global.nc of a predecessor's output changed greedy ids
    // as soon as anything was fetched before the wait). Alias analysis inside the kernel is
    // unchanged: `<entry>_impl`'s memref pointers stay noalias (PrepareLoweredKernel), scoped
    // metadata once inlined.
    auto readOnly = exe->getAttrOfType<DenseI64ArrayAttr>(kReadOnlyBindingsAttr);
    const bool overlapsWriters = SupportsGridDependencyControl(exe);
    auto nonCoherentOk = [&](unsigned i) {
      return i >= unsigned(memrefCount) || !overlapsWriters ||
             (readOnly && llvm::is_contained(readOnly.asArrayRef(), int64_t(i)));
    };
    for (unsigned i = 0; i < params.size(); ++i) {
      if (nonCoherentOk(i)) entry.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));
      entry.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(), b.getI64IntegerAttr(16));
    }
    Block* body = entry.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    // Programmatic dependent launch (sm_90+): the next kernel of a graph may launch as soon
    // as every block of this one has started (launch_dependents), and this one waits, before
    // its first memory access (the parameter buffer included), until the kernels it depends
    // on completed and their writes are visible. Without a programmatic prerequisite the
    // wait returns at once. The wait is inline PTX clobbering memory (kGridDependencyWaitAsm,
    // CUDAPasses.h), so no later access can be moved above it. The driver makes programmatic
    // edges only into kernels whose entry begins so (hexir-cuda-serialize-executables checks
    // it: "cuda.programmatic_wait.<entry>").
    if (SupportsGridDependencyControl(exe)) {
      NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::launch_dependents);
      // Weights first: thread 0 of block b asks L2 for the rows of read-only bindings the
      // block will reduce (no dispatch of the program writes them, kReadOnlyBindingsAttr), so
      // the stream starts while the prerequisite kernels drain. A prefetch is a hint, not an
      // access: the programmatic edge's rule (nothing read before the wait) still holds.
      if (!prefetches.empty()) prefetchRows(b, loc, entry, prefetches);
      // A one-block kernel's whole weights (CUDAStagedWeights.h): copies into shared memory or
      // L1 prefetches of read-only bindings, which no prerequisite writes.
      if (failed(cuda::EmitWeightStaging(b, loc, entry, gpuModule, staged, stagingMode, block)))
        return failure();
      LLVM::InlineAsmOp::create(b, loc, /*res=*/Type(), ValueRange{}, kGridDependencyWaitAsm, "~{memory}",
                                /*has_side_effects=*/true, /*is_align_stack=*/false,
                                LLVM::tailcallkind::TailCallKind::None, /*asm_dialect=*/LLVM::AsmDialectAttr(),
                                /*operand_attrs=*/ArrayAttr());
      cuda::EmitWeightStagingWait(b, loc, staged, stagingMode);
    }
    int64_t binding = 0, word = 0;
    auto param = [&]() -> Value {
      Value base = body->getArgument(memrefCount);
      Value addr = LLVM::GEPOp::create(b, loc, ptr, i64, base, ArrayRef<LLVM::GEPArg>{(int32_t)word++});
      return LLVM::LoadOp::create(b, loc, i64, addr, /*alignment=*/8);
    };
    SmallVector<Value> args;
    if (failed(codegen::AppendKernelArguments(
            b, loc, exe, "cuda", signature, [&] { return body->getArgument(binding++); }, param,
            args)))
      return failure();
    if (reportsErrors) args.push_back(body->getArguments().back());
    LLVM::CallOp::create(b, loc, impl, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    return success();
  }
};

}  // namespace
}  // namespace hexir
