// The state a loaded module shares with its functions: the VM context on one shared device
// and the worker thread of its async calls.
//
// A vm::Context runs one invocation at a time, so Invoke takes the module's mutex (callers
// release the GIL first). async_ calls run in submission order on one worker thread per
// module, started on first use. Close() runs what is queued, then drops the context; a call
// after it fails naming the module and the function. Owned through shared_ptr by the Module
// and by every Function taken from it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hal/api.h"
#include "vm/api.h"
#include "vm/module.h"

namespace hexir::python {

// Runs jobs in order on one thread; Stop() runs what is queued, then joins.
class Worker {
 public:
  ~Worker() { Stop(); }
  void Post(std::function<void()> job);
  void Stop();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

class ModuleState {
 public:
  ModuleState(vm::Ref<vm::Module> module, vm::Ref<hal::Device> device, std::unique_ptr<vm::Context> context)
      : module_(std::move(module)), device_(std::move(device)), context_(std::move(context)) {}
  ~ModuleState() { worker_.Stop(); }

  std::string name() const { return std::string(module_->name()); }
  const vm::Ref<hal::Device>& device() const { return device_; }
  const vm::Module& module() const { return *module_; }

  // Call without the GIL. `results` keeps its capacity from call to call.
  Status Invoke(const vm::Function& fn, std::vector<vm::Variant>& args, std::vector<vm::Variant>* results) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!context_) return FailedPrecondition("module '", name(), "' is closed; function '", fn.name, "' cannot be called");
    return context_->Invoke(fn, Span<vm::Variant>(args.data(), args.size()), results);
  }
  StatusOr<vm::Function> Lookup(const std::string& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!context_) return FailedPrecondition("module '", name(), "' is closed");
    return context_->LookupFunction(fn);
  }
  void Post(std::function<void()> job) { worker_.Post(std::move(job)); }
  void Close() {
    worker_.Stop();
    std::lock_guard<std::mutex> lock(mu_);
    context_.reset();
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !context_;
  }

 private:
  vm::Ref<vm::Module> module_;
  vm::Ref<hal::Device> device_;
  std::mutex mu_;
  std::unique_ptr<vm::Context> context_;  // null once closed
  Worker worker_;
};

}  // namespace hexir::python
