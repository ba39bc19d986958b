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
// Ownership: Module is refcounted and immutable after load (shareable across contexts and
// threads). A Context owns its native-module states, globals and loaded-module list; it is
// not thread-safe: one invocation at a time per context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  virtual Status Invoke(const Function& fn, Span<Variant> args,
                        std::vector<Variant>* results) = 0;
  // Optional bound on executed instructions per invocation (0 = none); exceeded ->
  // kResourceExhausted. Used by fuzzing.
  virtual void SetFuel(uint64_t instructions) = 0;
  virtual const ContextStats& stats() const = 0;
  // The state CreateState returned for the native module registered under `name`, if any.
  virtual NativeModuleState* native_state(std::string_view name) = 0;
};

}  // namespace hexir::vm
