// A loaded module bound to a device, callable with host values: what hexir-run, hexir-bench
// and the end-to-end tests share.
//
// Ownership: a Session owns its devices, VM context and module; results are host copies.
// Arguments are uploaded to the device the function's "abi.arg_devices" reflection names
// (device 0 when absent); results are read through device 0 (the compiler returns them there).
// Not thread-safe (one call at a time), like the VM context under it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "hal/api.h"
#include "tools/common/tensor_io.h"
#include "vm/api.h"
#include "vm/module.h"

namespace hexir::tools {

struct InvocationOptions {
  std::string device_uri = "cpu";
  // Every device by module device ordinal (a module compiled with --target repeated); empty:
  // the one device_uri. A module whose device list is longer fails naming the missing one.
  std::vector<std::string> device_uris;
  int cpu_threads = -1;  // -1: driver default; 0: inline (caller's thread)
};

// One parsed entry of a function's "abi.args"/"abi.results" reflection attribute.
struct AbiType {
  bool is_tensor = false;
  int32_t element_type = 0;   // hal element type code (also for scalars; index -> i64)
  std::vector<int64_t> dims;  // -1 for a dynamic dimension
  std::string text;           // as written, e.g. "tensor<2x?xf32>"
};

// Parses "tensor<2x?xf32>;f32" (the compiler's reflection syntax); empty text -> empty list.
StatusOr<std::vector<AbiType>> ParseAbiTypes(const std::string& text);

// The module device ordinal each argument of `fn` lives on, from its "abi.arg_devices"
// reflection ("0;1;0"; absent: all 0). An ordinal of `device_count` or more fails naming the
// function and the argument.
StatusOr<std::vector<size_t>> ArgumentDevices(const vm::Function& fn, size_t device_count);

// The devices `options` names (device_uris, else device_uri), created in order.
StatusOr<std::vector<vm::Ref<hal::Device>>> CreateDevices(const InvocationOptions& options);

// Session::Call on any context: `devices` are the context's devices by module ordinal
// (arguments go where "abi.arg_devices" says, results are read through devices[0]).
Status CallFunction(vm::Context& context, const std::vector<vm::Ref<hal::Device>>& devices,
                    const vm::Function& fn, const std::vector<HostValue>& inputs,
                    std::vector<HostValue>* results, const vm::InvokeOptions& options = {});
// The same with device buffers already uploaded (a parameter file's) passed after the host
// inputs, as the function's last arguments.
Status CallFunction(vm::Context& context, const std::vector<vm::Ref<hal::Device>>& devices,
                    const vm::Function& fn, const std::vector<HostValue>& inputs,
                    const std::vector<vm::Ref<hal::BufferView>>& trailing,
                    std::vector<HostValue>* results, const vm::InvokeOptions& options = {});

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> Open(const std::string& module_path,
                                                  const InvocationOptions& options);
  // The same with the module already loaded from `module_path`.
  static StatusOr<std::unique_ptr<Session>> Open(vm::Ref<vm::Module> module,
                                                  const std::string& module_path,
                                                  const InvocationOptions& options);

  StatusOr<vm::Function> LookupFunction(const std::string& name) const;
  // Converts inputs to VM arguments (uploading tensors), invokes, downloads results. The
  // deadline of `options` bounds the call and the downloads of its results.
  Status Call(const vm::Function& fn, const std::vector<HostValue>& inputs,
              std::vector<HostValue>* results, const vm::InvokeOptions& options = {});
  // Call with device buffers already uploaded (a parameter file's, uploaded once) passed after
  // the host inputs, as the function's last arguments.
  Status Call(const vm::Function& fn, const std::vector<HostValue>& inputs,
              const std::vector<vm::Ref<hal::BufferView>>& trailing,
              std::vector<HostValue>* results, const vm::InvokeOptions& options = {});

  hal::Device& device() { return *devices_[0]; }           // module device 0
  hal::Device& device(size_t ordinal) { return *devices_[ordinal]; }
  size_t device_count() const { return devices_.size(); }
  const std::vector<vm::Ref<hal::Device>>& devices() const { return devices_; }
  vm::Context& context() { return *context_; }

 private:
  Session() = default;
  vm::Ref<vm::Module> module_;
  std::vector<vm::Ref<hal::Device>> devices_;
  std::unique_ptr<vm::Context> context_;
};

}  // namespace hexir::tools
