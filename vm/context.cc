// The Context of vm/api.h: native-module registry, linked modules, one Interpreter.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vm/api.h"
#include "vm/byte_buffer.h"
#include "vm/interpreter.h"
#include "vm/module.h"

namespace hexir::vm {

std::string_view Function::attr(std::string_view key) const {
  for (const auto& [k, v] : attrs) {
    if (k == key) return v;
  }
  return {};
}

namespace {

class ContextImpl final : public Context {
 public:
  Status RegisterNativeModule(std::shared_ptr<NativeModule> module) override {
    if (!module) return InvalidArgument("RegisterNativeModule: null module");
    for (const Native& n : natives_) {
      if (n.module->name() == module->name()) {
        return FailedPrecondition("native module '", module->name(), "' is already registered");
      }
    }
    HEXIR_ASSIGN_OR_RETURN(auto state, module->CreateState(*this));
    if (!state) return Internal("native module '", module->name(), "' created a null state");
    natives_.push_back(Native{std::move(module), std::move(state)});
    return Status::Ok();
  }

  Status LoadModule(const Module& module) override {
    if (running_) return FailedPrecondition("LoadModule called during an invocation");
    auto linked = std::make_unique<LinkedModule>();
    linked->module = Ref<Module>::Retain(const_cast<Module*>(&module));
    for (size_t i = 0; i < module.imports().size(); ++i) {
      const ImportInfo& import = module.imports()[i];
      LinkedImport resolved;
      for (const Native& n : natives_) {
        for (const NativeFunction& f : n.module->functions()) {
          if (import.name == f.name) {
            if (!SignatureMatches(f.signature, import.signature)) {
              return InvalidArgument("module '", module.name(), "': import ", i, " '",
                                     import.name, "' has signature '", import.signature,
                                     "' but the native function expects '", f.signature, "'");
            }
            resolved = LinkedImport{&f, n.state.get()};
            break;
          }
        }
        if (resolved.function) break;
      }
      if (!resolved.function) {
        return NotFound("module '", module.name(), "': import ", i, " '", import.name,
                        "' is not provided by any registered native module");
      }
      linked->imports.push_back(resolved);
    }
    linked->value_globals.assign(module.value_global_count(), 0);
    linked->ref_globals.resize(module.ref_global_count());
    Ref<RefObject> owner = linked->module;
    for (size_t i = 0; i < module.rodata_count(); ++i) {
      Span<const uint8_t> bytes = module.rodata(i);
      linked->rodata.push_back(MakeRef<ByteBuffer>(bytes.data(), bytes.size(), owner));
    }
    if (module.initializer() >= 0) {
      std::vector<Variant> results;
      Status status = Run(*linked, static_cast<uint32_t>(module.initializer()), {}, &results);
      if (!status.ok()) {
        return std::move(status).WithContext(StrCat("module '", module.name(), "' initializer"));
      }
    }
    modules_.push_back(std::move(linked));
    return Status::Ok();
  }

  StatusOr<Function> LookupFunction(std::string_view name) const override {
    for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) {
      const Module& module = *(*it)->module;
      int64_t ordinal = module.FindExport(name);
      if (ordinal < 0) continue;
      const FunctionInfo& info = module.functions()[ordinal];
      Function fn;
      fn.module = &module;
      fn.ordinal = static_cast<uint32_t>(ordinal);
      fn.name = std::string(name);
      fn.signature = std::string(info.signature);
      for (const auto& [k, v] : info.attrs) fn.attrs.emplace_back(std::string(k), std::string(v));
      return fn;
    }
    return NotFound("function '", name, "' is not exported by any loaded module");
  }

  Status Invoke(const Function& fn, Span<Variant> args, std::vector<Variant>* results,
                const InvokeOptions& options) override {
    std::vector<Variant> ignored;
    if (!results) results = &ignored;
    // Newest first, like LookupFunction: a module linked twice runs its latest instance.
    for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) {
      LinkedModule* linked = it->get();
      if (linked->module.get() != fn.module) continue;
      if (fn.ordinal >= fn.module->functions().size()) {
        return OutOfRange("function ordinal ", fn.ordinal, " out of range");
      }
      return Run(*linked, fn.ordinal, args, results, options.deadline_ns);
    }
    return FailedPrecondition("function '", fn.name, "' belongs to a module not loaded here");
  }

  void Cancel() override { cancelled_.store(true, std::memory_order_relaxed); }

  void SetFuel(uint64_t instructions) override { fuel_ = instructions; }
  const ContextStats& stats() const override { return stats_; }

  NativeModuleState* native_state(std::string_view name) override {
    for (Native& n : natives_) {
      if (n.module->name() == name) return n.state.get();
    }
    return nullptr;
  }

 private:
  struct Native {
    std::shared_ptr<NativeModule> module;
    std::unique_ptr<NativeModuleState> state;
  };

  Status Run(LinkedModule& linked, uint32_t ordinal, Span<Variant> args,
             std::vector<Variant>* results, int64_t deadline_ns = Interrupt::kNoDeadline) {
    // An import calling back into its own context would corrupt the running frames.
    if (running_) return FailedPrecondition("Context::Invoke is not reentrant");
    running_ = true;
    ++stats_.invocations;
    // A cancel that arrived between invocations belongs to none of them.
    cancelled_.store(false, std::memory_order_relaxed);
    const Interrupt interrupt(deadline_ns, &cancelled_, Interrupt::NowNs());
    Status status =
        interpreter_.Invoke(linked, ordinal, args, results, fuel_, interrupt, &stats_);
    running_ = false;
    return status;
  }

  // Declared first so that it is destroyed last: linked modules and interpreter registers
  // may hold refs whose destructors reach into native state.
  std::vector<Native> natives_;
  std::vector<std::unique_ptr<LinkedModule>> modules_;
  Interpreter interpreter_;
  ContextStats stats_;
  uint64_t fuel_ = 0;
  bool running_ = false;
  std::atomic<bool> cancelled_{false};  // set by Cancel() from any thread
};

}  // namespace

std::unique_ptr<Context> Context::Create() { return std::make_unique<ContextImpl>(); }

}  // namespace hexir::vm
