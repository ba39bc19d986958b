// The VM's C++ embedding API.
//
//   auto module = vm::Module::LoadFromFile("m.vmfb");          // mmap + verify, once
//   auto context = vm::Context::Create();
//   context->RegisterNativeModule(hal::CreateHalModule(device)); // before loading modules
//   context->LoadModule(*module);                               // resolve imports, run initializer
//   auto fn = context->LookupFunction("main");
//   std::vector<vm::Variant> results;
//   context->Invoke(*fn, args, &results);
//
// Deadlines and cancellation: Invoke takes an optional absolute deadline (InvokeOptions);
// Cancel() stops the invocation running now. Either makes the call return its status
// (DeadlineExceeded "function 'main' @12: deadline exceeded after 2.000 s", Aborted "function
// 'main' @12: call cancelled", with the call stack like every trap) within about
// Interrupt::kWaitSliceNs, whether it is running bytecode or blocked in a HAL host wait. Device
// work it already submitted is abandoned (it finishes, or is dropped, on the device); the
// context and its devices stay usable for the next call.
//
// Ownership: Module is refcounted and immutable after load (shareable across contexts and
// threads). A Context owns its native-module states, globals and loaded-module list.
// Thread-safety: a Context is not thread-safe (one invocation at a time, from one thread at a
// time), except Cancel(), which any thread may call at any time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/interrupt.h"
#include "base/span.h"
#include "base/status.h"
#include "vm/native_module.h"
#include "vm/ref.h"

namespace hexir::vm {

class Module;
class Context;

// A function resolved in a context, ready to invoke.
struct Function {
  const Module* module = nullptr;
  uint32_t ordinal = 0;        // into the module's functions
  std::string name;
  std::string signature;       // "rri_r"
  // Reflection attributes written by the compiler ("abi.args", "abi.results", ...).
  std::vector<std::pair<std::string, std::string>> attrs;
  std::string_view attr(std::string_view key) const;  // "" if absent
};

// Counters an embedder or test can read (reset with the context).
struct ContextStats {
  uint64_t invocations = 0;
  uint64_t instructions = 0;   // executed bytecode instructions (all invocations)
  uint64_t import_calls = 0;
  uint64_t internal_calls = 0;
};

// Options of one Invoke.
struct InvokeOptions {
  // Absolute deadline on the monotonic clock (Interrupt::NowNs(): std::chrono::steady_clock,
  // CLOCK_MONOTONIC), in nanoseconds; Interrupt::kNoDeadline = none. A deadline already
  // passed fails the call at its first check (its first import call, taken branch or call).
  int64_t deadline_ns = Interrupt::kNoDeadline;
};

class Context {
 public:
  static std::unique_ptr<Context> Create();
  virtual ~Context() = default;

  // Makes a native module's functions available to modules loaded afterwards.
  virtual Status RegisterNativeModule(std::shared_ptr<NativeModule> module) = 0;
  // Links `module` into this context: resolves and checks every import, allocates globals,
  // runs the initializer once. The context retains the module.
  virtual Status LoadModule(const Module& module) = 0;
  // Looks up an exported function among the loaded modules (last loaded wins).
  virtual StatusOr<Function> LookupFunction(std::string_view name) const = 0;
  // Calls `fn`: args in signature order; results resized to the signature's result count.
  // Any trap or import failure returns an error naming function and bytecode offset;
  // the context stays usable.
  Status Invoke(const Function& fn, Span<Variant> args, std::vector<Variant>* results) {
    return Invoke(fn, args, results, InvokeOptions());
  }
  // The same with a deadline. Past it (or after Cancel()) the call returns DeadlineExceeded
  // (or Aborted) naming the function, offset and call stack; results are then empty.
  virtual Status Invoke(const Function& fn, Span<Variant> args, std::vector<Variant>* results,
                        const InvokeOptions& options) = 0;
  // Thread-safe: makes the invocation running in this context (if any) stop with
  // Aborted("call cancelled") at its next check: a back-edge or call within 8192
  // instructions, an import call, or within Interrupt::kWaitSliceNs of a HAL host wait. A
  // cancel while no invocation runs has no effect (each invocation starts uncancelled).
  virtual void Cancel() = 0;
  // Optional bound on executed instructions per invocation (0 = none); exceeded ->
  // kResourceExhausted. Used by fuzzing.
  virtual void SetFuel(uint64_t instructions) = 0;
  virtual const ContextStats& stats() const = 0;
  // The state CreateState returned for the native module registered under `name`, if any.
  virtual NativeModuleState* native_state(std::string_view name) = 0;
};

}  // namespace hexir::vm
