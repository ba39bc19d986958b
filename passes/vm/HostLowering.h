// The state shared by the parts of hexir-convert-to-vm (ConvertToVM.cpp is the pass driver).
//
// One HostLowering lowers one host function (func.func on tensors and scalars, control flow
// in `cf` form, dispatches inside `hexir.execute` regions) to a func.func of hexir_vm ops.
// Its methods are grouped by concern, one file each:
//   HostLowering.cpp          function signature, blocks, arguments; the driver applying the
//                             patterns to each op in block order
//   HostLoweringPatterns.cpp  one rewrite pattern per host op (the op -> lowering table)
//   LowerScalarArith.cpp      host arith on scalars -> VM instructions
//   LowerTensors.cpp          constants, empties, reshapes/casts (aliases), checks, dims, reads
//   LowerExecutionRegions.cpp hexir.execute -> allocations, parameter buffers, the memoized
//                             command buffer (record once, replay), timepoints -> semaphores
//   LowerRecordedCalls.cpp    calls recorded into the caller's command buffer: the callee's
//                             host form and `.record` function, the call site
//   LowerCollectives.cpp      collectives in a region, the channel's rank and count
//   LowerControlFlow.cpp      calls, branches, returns
// Tensors are (buffer ref, dims as i64 registers); scalars are i64/f64 registers.
// Why a driver of its own and not applyPartialConversion: a host tensor becomes a buffer and
// a register per dim (static dims too, as constants), and an entry argument or call result is
// a view unwrapped once; the function is rebuilt block by block in source order, so every
// pattern sees its operands already lowered (the value maps below) and the emitted
// instruction order, hence the bytecode, follows the source.
// Not thread-safe: one instance per function, used once.
#pragma once

#include <optional>
#include <utility>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "hal/element_type.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "passes/ElementTypeCode.h"
#include "passes/vm/DispatchRecording.h"
#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {
using namespace mlir;

// Where a recorded callee's binding-table slot gets its buffer at a call site: an argument of
// the callee's VM form (the caller's own buffer: `index` = the argument's position), a result
// (`index` = the result number: the call's result buffer), or the callee's own (a transient or
// a parameter buffer: `index` = its position among the buffers returned after the results).
// The caller binds each distinct buffer once, as for inlined dispatches, so a buffer written
// by one call and read by the next is one slot (a graph orders its users by slots).
struct RecordedSlot {
  enum Kind { kArgument, kResult, kOwn } kind;
  int64_t index;
};
// The callee's arguments after its held results, one per buffer its region makes that a call
// site carries to the next call: a transient (the call site keeps its own, like a held result,
// so no two call sites share a buffer) or a parameter buffer (the previous call's in the
// caller's region, reused when its words are equal). `own`: where the call returns the buffer
// among its own buffers. `acrossExecutions`: a CPU executable's parameter buffer, which the
// first call of the callee in a region also gets back: the buffer the first call returned at
// the region's previous execution (a ref global per call site), as an inlined body's is.
struct CarriedBuffer {
  enum Kind { kTransient, kParameters } kind;
  int64_t own = -1;
  bool acrossExecutions = false;
};
struct RecordedCallee {
  SmallVector<RecordedSlot> slots;  // in the callee's slot order (`.record`'s i64 arguments)
  int64_t ownBuffers = 0;           // returned after the results
  SmallVector<CarriedBuffer> carried;
};

// State shared by every function of the module: globals and the initializer's body.
struct ModuleState {
  explicit ModuleState(ModuleOp module) : module(module) {}
  ModuleOp module;
  llvm::StringMap<int64_t> executableOrdinals;
  int64_t refGlobals = 0;
  // Constants: uploaded once by the initializer into ref globals, each to its device
  // (`hexir.device` of the constant: a module device ordinal, 0 when absent).
  struct Constant {
    DenseElementsAttr value;
    int64_t global;
    int64_t device;
  };
  SmallVector<Constant> constants;
  // Tensor globals (hexir.global): one ref global each; the hexir.initializer functions
  // that write them are called by the module initializer after the constant uploads.
  llvm::StringMap<int64_t> tensorGlobals;
  SmallVector<std::string> initializerForms;
  // Callees recorded into their callers' command buffers (schedule/RecordedCalls.h), lowered
  // before the other functions: what each call site binds (RecordedCallee).
  llvm::StringMap<RecordedCallee> recordedCallees;
};

// A host tensor: its buffer and its dims (i64 registers; constants for static dims).
struct HostTensor {
  Value buffer;
  SmallVector<Value> dims;
  Value view;  // the argument view it came from, if any (returned as is)
};

// A collective of the execution region being lowered: its hal/channel.h codes and the i64
// registers of its element count and peer (read when the command buffer is recorded).
struct PendingCollective {
  int64_t kind = 0;
  int64_t reduction = 0;
  int64_t elementType = 0;
  Value count;
  Value peer;
  bool hasSend = false;  // bindings: the send buffer first (if any), then the recv buffer
  bool hasRecv = false;
  // Count and peer are known at compile time, so one recording serves every execution.
  bool replayable = true;
};

// A command (a dispatch, a collective when `collective` is set, or a call recorded into the
// region when `recordedCall` is set) of the execution region being lowered, in recording order.
struct PendingDispatch {
  DispatchOp op;
  std::optional<PendingCollective> collective;
  // A recorded call: the callee; `bindings` are the buffers of its slots, in the callee's slot
  // order (its `.record` function takes the caller's slot ordinal of each).
  FlatSymbolRefAttr recordedCall;
  SmallVector<Value> bindings;  // buffers, params buffer last
  bool barrierBefore = false;   // a hexir.barrier precedes it in the region
  std::optional<int64_t> countOffset;  // indirect: the count's byte offset in the params buffer
  // Its parameter words' byte offset in the params buffer (nonzero: the region's packed one).
  int64_t paramsOffset = 0;
};

// The parameter words of a region's CPU and CUDA dispatches packed into one buffer, each list at a
// 64-byte aligned offset (equal lists once), kept in a ref global and reused while the words
// repeat (`hal.allocator.reuse_uniform`, emitted before the region's recording with every
// word): one import call and one binding-table slot per region, not one per dispatch.
// The CUDA HAL copies a uniform slot of at most 64 KiB into a device-side shadow at each
// submission (hal/drivers/cuda/cuda_recording.cc StageUniforms); a larger one would be read
// from pinned host memory over PCIe by every kernel, so a CUDA list past it gets a reused
// buffer of its own.
constexpr int64_t kMaxCudaPackedParamsBytes = 64 * 1024;
struct PackedParams {
  SmallVector<Value> words;  // each list zero-padded to an 8-word multiple but the last
  SmallVector<std::pair<SmallVector<Value>, int64_t>> lists;  // list -> byte offset
  Operation* load = nullptr;  // global.load.ref, reuse_uniform, global.store.ref
  Operation* reuse = nullptr;
  Operation* store = nullptr;
};

// The function recording a recorded callee's commands into a caller's command buffer
// (`<callee>.record(cb, slot ordinals...)`, LowerRecordedCalls.cpp).
inline FlatSymbolRefAttr RecordFunctionSymbol(FlatSymbolRefAttr callee) {
  return FlatSymbolRefAttr::get(callee.getContext(), (callee.getValue() + ".record").str());
}

// A timepoint after lowering: the semaphore the region signals and the value it reaches.
struct LoweredTimepoint {
  Value semaphore;
  Value value;
};

// The module initializer: uploads every constant once into its ref global.
void BuildInitializer(ModuleState& state);

class HostLowering;

// The rewrite patterns lowering one host op each (HostLoweringPatterns.cpp). They emit through
// `lowering`'s builder into the VM function being built (the rewriter a pattern is given is
// positioned at the source op, which is erased with its function).
void populateHostLoweringPatterns(RewritePatternSet& patterns, HostLowering& lowering);
// The error for an op no pattern lowers: why it is not a host op here.
LogicalResult emitNoPattern(Operation* op, HostLowering& lowering);

class HostLowering {
 public:
  HostLowering(func::FuncOp func, ModuleState& state)
      : func(func), state(state), recordedForm(func->hasAttr(kRecordsIntoCallerAttr)),
        ctx(func.getContext()), b(func), ref(vmir::RefType::get(ctx)) {}

  // Replaces `func` by its VM form; on failure (a diagnostic at the offending op) leaves it.
  LogicalResult run();

  // ---- the rewrites the patterns apply (each emits at the end of the current VM block) ----
  // tensors (LowerTensors.cpp)
  LogicalResult lowerScalarConstant(arith::ConstantOp c);
  LogicalResult lowerTensorConstant(arith::ConstantOp c);
  LogicalResult lowerEmpty(tensor::EmptyOp e);
  LogicalResult lowerGlobalLoad(GlobalLoadOp g);
  LogicalResult lowerGlobalStore(GlobalStoreOp g);
  LogicalResult lowerSameBuffer(SameBufferOp s);
  LogicalResult lowerReshape(Operation* op);
  LogicalResult lowerCast(tensor::CastOp c);
  LogicalResult lowerCheck(CheckOp c);
  LogicalResult lowerDim(tensor::DimOp d);
  LogicalResult lowerExtract(tensor::ExtractOp e);
  // execution regions (LowerExecutionRegions.cpp), channel queries (LowerCollectives.cpp)
  LogicalResult lowerExecute(ExecuteOp e);
  LogicalResult lowerRecordedCall(func::CallOp c, const DenseSet<Value>& yieldedRoots);
  LogicalResult lowerChannelQuery(Operation* op);
  // calls and control flow (LowerControlFlow.cpp)
  LogicalResult lowerCall(func::CallOp c);
  LogicalResult lowerBranch(cf::BranchOp br);
  LogicalResult lowerCondBranch(cf::CondBranchOp br);
  LogicalResult lowerReturn(func::ReturnOp r);
  // host scalar arithmetic (LowerScalarArith.cpp): the op -> instructions table
  LogicalResult lowerScalarArith(Operation* op);
  // The VM register type of a host type (null: not a host type for this target).
  Type vmType(Type t);

 private:
  // ---- helpers (HostLowering.cpp) ----
  Value i64(int64_t v) {
    return vmir::ConstI64Op::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
  }
  Value inst(StringRef mnemonic, ValueRange operands, Type result) {
    return vmir::InstOp::create(b, loc, TypeRange{result}, b.getStringAttr(mnemonic), operands)
        .getResult(0);
  }
  Value instI(StringRef mnemonic, ValueRange operands) { return inst(mnemonic, operands, b.getI64Type()); }
  Value null() { return vmir::NullRefOp::create(b, loc, ref); }
  int64_t elementSize(RankedTensorType t) {
    return hal::ElementTypeByteSize(elementTypeCode(t.getElementType()));
  }
  Value byteSize(RankedTensorType t, ArrayRef<Value> dims);
  LogicalResult flatten(Operation* op, Value v, SmallVectorImpl<Value>& out);
  void addBlockArguments(Block* block, Block* vmBlock);
  void materializeStaticDims();
  LogicalResult lowerBody();
  HostTensor importView(Value view, RankedTensorType tensor, int64_t index, bool check);
  Value exportView(const HostTensor& h, RankedTensorType t);
  LogicalResult lowerOp(Operation& op, PatternApplicator& patterns);

  // ---- tensors (LowerTensors.cpp) ----
  int64_t tensorGlobal(FlatSymbolRefAttr name);

  // ---- execution regions (LowerExecutionRegions.cpp) ----
  LogicalResult lowerExecuteOnDevice(ExecuteOp e);  // `device` set to the region's
  LogicalResult lowerTransfer(TransferOp t, ExecuteOp e);
  FailureOr<Value> paramWord(DispatchOp d, Value v);
  LogicalResult lowerDispatch(DispatchOp d, const DenseSet<Value>& yieldedRoots);
  Value allocateResult(Value result, const HostTensor& h, const DenseSet<Value>& yieldedRoots);

  // ---- collectives (LowerCollectives.cpp) ----
  Value defaultChannel() { return hal_import::ChannelDefault(b, loc, device); }
  LogicalResult lowerCollective(Operation* op, const DenseSet<Value>& yieldedRoots);
  void recordCollective(Value cb, Value channel, const PendingDispatch& p,
                        const DenseMap<Value, int64_t>& slotOf);
  Value lookupExecutable(const PendingDispatch& p, llvm::StringMap<Value>& executables);
  void recordDispatch(Value cb, const PendingDispatch& p, Value exe,
                      const DenseMap<Value, int64_t>& slotOf, ArrayRef<Value> slotValues);
  void assignSlots(SmallVectorImpl<Value>& slots, DenseMap<Value, int64_t>& slotOf);
  void recordCommands(Value commands, const DenseMap<Value, int64_t>& slotOf,
                      ArrayRef<Value> slotValues);
  void emitRegion(ExecuteOp e);
  void emitRecordedRegion(ExecuteOp e);
  void endRegion();  // forgets the region's pending commands, parameter lists, counts
  void mapHeldResultBuffers(Block* entry);  // a recorded callee: its held-buffer arguments
  // A region's, shared by equal lists. `reused`: kept in a ref global and reused by the next
  // execution when its words are equal (a CPU or CUDA executable's, LowerExecutionRegions.cpp).
  Value parameterBuffer(ArrayRef<Value> params, bool reused);
  // The region's packed parameter buffer and the byte offset of `params` in it, or nullopt when
  // adding them would take the buffer past `maxBytes` (ParamsPacking.cpp).
  std::optional<std::pair<Value, int64_t>> packedParameters(ArrayRef<Value> params,
                                                            int64_t maxBytes);
  void emitPackedParameters();  // the one reuse_uniform, at b's insertion point, every word
  LogicalResult describeRecordedSlots(func::ReturnOp r, SmallVectorImpl<Value>& results);

  // ---- calls and control flow (LowerControlFlow.cpp) ----
  LogicalResult edgeOperands(Operation* op, ValueRange operands, SmallVectorImpl<Value>& out);

  // ---- host scalar arithmetic (LowerScalarArith.cpp) ----
  Value roundedDivSI(Value a, Value d, bool i32, bool ceil);
  Value lowerCmpI(arith::CmpIPredicate p, Value l, Value r);
  Value lowerCmpF(arith::CmpFPredicate p, Value l, Value r);

  func::FuncOp func, vmFunc;
  ModuleState& state;
  // `func` records into its callers (schedule/RecordedCalls.h): its VM form takes and returns
  // tensors as buffer + dynamic dims, records nothing and submits nothing, and returns after
  // its results the slot buffers its callers do not have (RecordedSlot::kOwn);
  // `<name>.record(cb, slot ordinals...)` records its region's commands into a caller's
  // command buffer with the caller's slot of each of its slots.
  // Its VM form also takes, after its arguments, one buffer per result that the caller keeps
  // for that call site (null where the caller yields the result): a fresh result is that
  // buffer when it is large enough (hal.device.transient), so a result used only inside the
  // caller's region is allocated once per call site, not once per call. Then one buffer per
  // transient and per parameter list of its region (CarriedBuffer), in the order its region
  // makes them: the call site's own transient (held by the caller per call site, as inlined
  // layers have their own), and the previous call's parameter buffer (null for the first call
  // of a caller's region), reused when its words are equal (hal.allocator.reuse_uniform), so L
  // calls allocate the buffers L inlined bodies would.
  bool recordedForm = false;
  SmallVector<Value> recordedSlots;
  SmallVector<std::pair<CarriedBuffer, Value>> carriedBuffers;  // in argument order (`own` unset)
  Value carriedBuffer(CarriedBuffer::Kind kind, Value bytesOrNull, ArrayRef<Value> params,
                      bool acrossExecutions = false);
  DenseMap<Value, Value> heldResultBuffers;  // region value (a fresh root) -> the caller's buffer
  MLIRContext* ctx;
  OpBuilder b;  // builds the VM function (the patterns' rewriter only hears their reasons)
  Type ref;
  Location loc = UnknownLoc::get(ctx);
  // Module device ordinal -> the function's device value (hal.device.default for 0,
  // hal.device.at for the others), materialized at entry for every ordinal the function uses.
  DenseMap<int64_t, Value> devices;
  Value deviceAt(int64_t ordinal) { return devices.lookup(ordinal); }
  Value device;  // device 0; while an execution region is lowered, the region's device
  Block* cur = nullptr;
  DenseMap<Block*, Block*> blocks;
  DenseMap<Value, HostTensor> tensors;
  DenseMap<Value, Value> scalars;
  DenseMap<Value, LoweredTimepoint> timepoints;
  SmallVector<Value> pendingStaticDims;
  // The execution region being lowered.
  SmallVector<PendingDispatch> pending;
  SmallVector<std::pair<SmallVector<Value>, Value>> regionParams;
  PackedParams packed;
  // Per recorded callee called in the region: the buffers its last call returned, per carried
  // buffer (RecordedCallee::carried).
  llvm::StringMap<SmallVector<Value>> calleeCarriedBuffers;
  WorkgroupCounts workgroupCounts;  // dynamic counts emitted for this region (shared words)
};

}  // namespace hexir::vm_lowering
