// The bytecode interpreter (internal to vm/; embedders use vm/api.h).
//
// Executes verified bytecode (vm/verifier.h) without bounds checks. Frames live on heap
// stacks owned by the Interpreter, so internal calls never recurse on the C stack.
//
// Ownership: a LinkedModule is one module linked into one context (resolved imports, globals,
// rodata buffers); the Context owns it. An Interpreter owns its register stacks and scratch
// space and is reused across invocations. Not thread-safe; not reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "base/interrupt.h"
#include "base/span.h"
#include "base/status.h"
#include "vm/api.h"
#include "vm/module.h"
#include "vm/native_module.h"

namespace hexir::vm {

struct LinkedImport {
  const NativeFunction* function = nullptr;
  NativeModuleState* state = nullptr;
};

struct LinkedModule {
  Ref<Module> module;
  std::vector<LinkedImport> imports;          // by import ordinal
  std::vector<int64_t> value_globals;
  std::vector<Ref<RefObject>> ref_globals;
  std::vector<Ref<RefObject>> rodata;         // a vm.buffer per rodata ordinal
};

// Deepest call nesting one invocation may reach before trapping with kResourceExhausted.
inline constexpr size_t kMaxCallDepth = 1u << 20;
// Most registers (per bank) the frames of one invocation may hold together; a call past it
// traps with kResourceExhausted (keeps deep recursion of wide frames from exhausting memory).
inline constexpr size_t kMaxRegisterStack = 1u << 24;

class Interpreter {
 public:
  // Runs function `ordinal` of `linked`. `args` must match its signature (checked here);
  // refs are retained, not consumed. `results` is resized to the result count. `fuel` bounds
  // the executed instructions (0 = unbounded; checked at branches and calls, so it may be
  // exceeded by at most one straight-line run). `interrupt` is checked every
  // kInterruptCheckInstructions at taken branches and calls, and before every import call;
  // imports receive it (NativeCall::interrupt) for their host waits. When it fires the
  // invocation traps with its status (DeadlineExceeded or Aborted). Counters are added to
  // `stats`.
  Status Invoke(LinkedModule& linked, uint32_t ordinal, Span<Variant> args,
                std::vector<Variant>* results, uint64_t fuel, const Interrupt& interrupt,
                ContextStats* stats);

 private:
  struct Frame {
    uint32_t function;
    const uint32_t* call_ip;    // the caller's call instruction (trap call stacks)
    const uint32_t* return_ip;  // the caller's call-result list
    size_t value_base;
    size_t ref_base;
  };

  Status Run(LinkedModule& linked, uint32_t ordinal, std::vector<Variant>* results,
             uint64_t fuel, const Interrupt& interrupt, ContextStats* stats);
  void Unwind();

  std::vector<int64_t> values_;
  std::vector<Ref<RefObject>> refs_;   // every slot above the live frames is null
  std::vector<Frame> frames_;
  size_t ref_top_ = 0;                 // end of the live ref registers
  // Parallel-copy and import scratch.
  std::vector<int64_t> copy_values_;
  std::vector<Ref<RefObject>> copy_refs_;
  std::vector<Variant> import_args_;
  std::vector<Variant> import_results_;
};

}  // namespace hexir::vm
