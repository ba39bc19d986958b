// Native modules: C++ functions that bytecode calls through `call.import`.
//
// A bytecode module declares imports by full name ("hal.buffer_view.dim") and exact signature.
// When a context loads the module, each import is resolved against the native modules
// registered in that context; the import's signature must match the native function's
// pattern (checked once, at load). A pattern is a signature whose argument part may end in
// '*': zero or more further arguments of any kind. Results are never variadic.
//
// Ownership: the Context owns each NativeModuleState it creates (one per context per native
// module). Arguments are owned by the interpreter for the duration of the call; a native
// function may std::move a ref out of `args` (it was moved in by the caller or retained for
// the call). Results are written by the callee and moved into the caller's registers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/interrupt.h"
#include "base/span.h"
#include "base/status.h"
#include "vm/ref.h"

namespace hexir::vm {

class Context;

// One call argument or result: `bits` for value kinds ('i': i64, 'f': f64 bits), `ref` for 'r'.
struct Variant {
  int64_t bits = 0;
  Ref<RefObject> ref;
};

// Read-only view of an executable stored in a loaded bytecode module.
struct ExecutableView {
  std::string_view format;                    // "cpu-elf-x86_64", "cuda-cubin-sm_90", ...
  const uint8_t* data = nullptr;              // the binary, 64-byte aligned, owned by the module
  size_t size = 0;
  std::vector<std::string_view> entry_points; // by entry ordinal
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  // Per entry, bit i set: binding i may be written; empty: unknown (every binding may be).
  std::vector<uint64_t> entry_written_bindings;
};

// What a native function may ask of the bytecode module that called it.
class CallerModule {
 public:
  virtual ~CallerModule() = default;
  virtual std::string_view name() const = 0;
  // Unique for the life of the process per loaded module; use it in cache keys.
  virtual uint64_t instance_id() const = 0;
  virtual size_t executable_count() const = 0;
  virtual StatusOr<ExecutableView> executable(size_t ordinal) const = 0;
};

struct NativeCall {
  const CallerModule* caller = nullptr;
  std::string_view import_name;  // for error messages
  std::string_view signature;    // the import's exact signature, e.g. "rriiiiirr_"
  Span<Variant> args;            // in signature order
  Span<Variant> results;         // sized by the signature; the callee fills them
  // The invocation's deadline and cancellation: a native function that blocks (a host wait)
  // honours it and returns its status when it fires. Never null.
  const Interrupt* interrupt = &kNoInterrupt;
};

class NativeModuleState {
 public:
  virtual ~NativeModuleState() = default;
};

struct NativeFunction {
  const char* name;       // full name: "hal.buffer_view.dim"
  const char* signature;  // pattern: "ri_i", "rriiiii*_"
  Status (*call)(NativeModuleState& state, NativeCall& call);
};

class NativeModule {
 public:
  virtual ~NativeModule() = default;
  // Prefix of every function name ("hal" for "hal.*").
  virtual std::string_view name() const = 0;
  virtual Span<const NativeFunction> functions() const = 0;
  // Creates this module's per-context state; called once when a context links the module.
  virtual StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context& context) = 0;
};

// True when the exact signature `sig` matches native `pattern` (see the header comment).
bool SignatureMatches(std::string_view pattern, std::string_view sig);

}  // namespace hexir::vm
