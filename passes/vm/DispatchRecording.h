// How ConvertToVM records one dispatch: its workgroup count is either the executable's static
// `hexir.workgroup_count` (recorded as `hal.command_buffer.dispatch_slots`) or computed per
// call from shape registers (`hexir.workgroup_count_dynamic`, passes/codegen/WorkgroupCount.h):
// VM arithmetic on the dispatch's parameter words, stored after them in its parameter buffer
// as the HAL's indirect count (3 x u32: x, 1, 1), and the dispatch is recorded as
// `hal.command_buffer.dispatch_indirect_slots` reading that slot and offset. So a recorded
// command buffer (a CUDA graph) survives a new count: nothing size-dependent is recorded.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/IR/Builders.h"

namespace hexir::vm_lowering {

// Per segment: the count words already emitted, so dispatches with equal parameters and an
// equal description share their parameter buffer (ConvertToVM compares the word lists).
class WorkgroupCounts {
 public:
  // Checks `exe`'s count attributes. For a dynamic count, emits (at b's insertion point)
  //   n = factor * params[w]...;  tile = max(T, ceil(n / L));  count = max(1, ceil(n / tile))
  // appends the words [count | 1 << 32, 1] (x = count, y = 1, z = 1, 4 bytes of padding) to
  // `params` and returns the byte offset of the count in the parameter buffer; nullopt for a
  // static count. Errors name the dispatch (no count, a word the dispatch does not have).
  mlir::FailureOr<std::optional<int64_t>> Append(mlir::OpBuilder& b, mlir::Location loc,
                                                 DispatchOp dispatch, ExecutableOp exe,
                                                 llvm::SmallVectorImpl<mlir::Value>& params);
  // At the end of a segment (emitted values need not dominate the next one).
  void Clear() { emitted_.clear(); }

 private:
  // (description, the words it read, word 0, word 1)
  llvm::SmallVector<std::tuple<mlir::Attribute, llvm::SmallVector<mlir::Value>, mlir::Value,
                               mlir::Value>>
      emitted_;
};

// The binding-table slot and byte offset holding an indirect dispatch's count.
struct CountSlot {
  int64_t slot = 0;
  int64_t offset = 0;
};

// Records the dispatch of `exe` (entry 0) into `cb` with the given binding-table slot
// ordinals: indirect from `count` when given, else with exeOp's static count. With
// `slotValues` (a recorded callee's `.record` function: i64 registers holding its caller's
// slot ordinal of each of its slots), ordinal s is recorded as slotValues[s]. With a nonzero
// `bindingOffsets` entry (binding i's byte offset into its slot's buffer: a region's packed
// parameter words), it is recorded with the `_at` imports, a (slot, offset) pair per binding.
void RecordDispatch(mlir::OpBuilder& b, mlir::Location loc, mlir::Value cb, mlir::Value exe,
                    ExecutableOp exeOp, llvm::ArrayRef<int64_t> bindingSlots,
                    std::optional<CountSlot> count, llvm::ArrayRef<mlir::Value> slotValues = {},
                    llvm::ArrayRef<int64_t> bindingOffsets = {});

}  // namespace hexir::vm_lowering
