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
  // A caller saved by `call`, restored by `return`.
  struct Frame {
    uint32_t function;
    const uint32_t* call_ip;    // the caller's call instruction (trap call stacks)
    const uint32_t* return_ip;  // the caller's call-result list
    size_t value_base;
    size_t ref_base;
  };
  // The running function: its ordinal, code and registers (a Run local the compiler keeps in
  // machine registers; the helpers below take it by reference and are inlined).
  struct Activation {
    uint32_t function;
    const FunctionInfo* fn;
    const uint32_t* code;
    size_t value_base;
    size_t ref_base;
    int64_t* v;            // values_.data() + value_base
    Ref<RefObject>* r;     // refs_.data() + ref_base
  };
  // The callers of the running function: frames[0, depth) of frames_ (capacity its size).
  struct CallStack {
    Frame* frames;
    size_t depth;
    size_t capacity;
  };

  // The dispatch loop (interpreter.cc): runs `ordinal` with its arguments in place.
  Status Run(LinkedModule& linked, uint32_t ordinal, std::vector<Variant>* results,
             uint64_t fuel, const Interrupt& interrupt, ContextStats* stats);
  void Unwind();

  // Calls and returns (interpreter_calls.h, inlined into Run). `ip` is the call or return
  // instruction; each updates `at`, `stack` and `ip` to where execution continues.
  // `call`: pushes the caller and enters callee F; a failure (call depth, register stack) is
  // returned with nothing changed.
  Status EnterCall(const FunctionInfo* fns, Activation& at, CallStack& stack,
                   const uint32_t*& ip);
  // `return` to the caller on top of a non-empty `stack`: copies the results into its result
  // registers and clears the returning frame's refs.
  void ReturnToCaller(const FunctionInfo* fns, Activation& at, CallStack& stack,
                      const uint32_t*& ip);
  // `call.import`: passes the argument list, binds the results; an import's failure comes back
  // prefixed with its name (`ip` then stays on the instruction).
  Status CallImport(const LinkedModule& linked, const Activation& at, const Interrupt& interrupt,
                    const uint32_t*& ip);
  // Rewrites *trap, raised at `offset` of `fn`, into the invocation's message
  // (interpreter_traps.cc): `function 'f' @12: <trap>; called from 'g' @3, ...`, the callers
  // frames[depth-1] down to frames[0] (8 at most, the rest counted). Six arguments, all in
  // machine registers: a seventh made gcc give the dispatch loop a frame pointer.
  static void DescribeTrap(Status* trap, const FunctionInfo* fns, const FunctionInfo& fn,
                           size_t offset, const Frame* frames, size_t depth);

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
