#include "tools/common/invocation.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "hal/element_type.h"
#include "hal/module/hal_module.h"

namespace hexir::tools {
namespace {

std::string ListTypes(const std::vector<AbiType>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + types[i].text;
  return s;
}

StatusOr<AbiType> ParseAbiType(const std::string& text) {
  AbiType t;
  t.text = text;
  std::string body = text;
  if (body.rfind("tensor<", 0) == 0 && body.back() == '>') {
    t.is_tensor = true;
    body = body.substr(7, body.size() - 8);
    size_t x;
    while ((x = body.find('x')) != std::string::npos) {
      std::string d = body.substr(0, x);
      if (d == "?") {
        t.dims.push_back(-1);
      } else {
        char* end = nullptr;
        long long v = std::strtoll(d.c_str(), &end, 10);
        if (d.empty() || *end) return InvalidArgument("bad dimension '", d, "' in reflected type '", text, "'");
        t.dims.push_back(v);
      }
      body = body.substr(x + 1);
    }
  }
  t.element_type = body == "index" ? static_cast<int32_t>(hal::ElementType::kI64)
                                   : hal::ElementTypeFromName(body);
  if (t.element_type == 0) return Unimplemented("reflected type '", text, "' is not supported by this tool");
  return t;
}

}  // namespace

StatusOr<std::vector<AbiType>> ParseAbiTypes(const std::string& text) {
  std::vector<AbiType> types;
  size_t start = 0;
  while (start < text.size()) {
    size_t semi = text.find(';', start);
    if (semi == std::string::npos) semi = text.size();
    HEXIR_ASSIGN_OR_RETURN(AbiType t, ParseAbiType(text.substr(start, semi - start)));
    types.push_back(std::move(t));
    start = semi + 1;
  }
  return types;
}

StatusOr<std::vector<vm::Ref<hal::Device>>> CreateDevices(const InvocationOptions& options) {
  if (options.cpu_threads < -1 || options.cpu_threads > hal::kMaxCpuWorkers) {
    return InvalidArgument("--cpu-threads=", options.cpu_threads, ": expected 0..",
                           hal::kMaxCpuWorkers, " worker threads (0: inline)");
  }
  hal::DeviceOptions device_options;
  if (options.cpu_threads >= 0) {
    device_options.cpu_worker_count = options.cpu_threads;
    device_options.cpu_inline = options.cpu_threads == 0;
  }
  std::vector<std::string> uris = options.device_uris;
  if (uris.empty()) uris.push_back(options.device_uri);
  std::vector<vm::Ref<hal::Device>> devices;
  for (const std::string& uri : uris) {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<hal::Device> device, hal::CreateDevice(uri, device_options));
    devices.push_back(std::move(device));
  }
  return devices;
}

StatusOr<std::unique_ptr<Session>> Session::Open(const std::string& module_path,
                                                 const InvocationOptions& options) {
  if (options.cpu_threads < -1 || options.cpu_threads > hal::kMaxCpuWorkers) {
    return InvalidArgument("--cpu-threads=", options.cpu_threads, ": expected 0..",
                           hal::kMaxCpuWorkers, " worker threads (0: inline)");
  }
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<vm::Module> module, vm::Module::LoadFromFile(module_path));
  return Open(std::move(module), module_path, options);
}

StatusOr<std::unique_ptr<Session>> Session::Open(vm::Ref<vm::Module> module,
                                                 const std::string& module_path,
                                                 const InvocationOptions& options) {
  std::unique_ptr<Session> s(new Session());
  s->module_ = std::move(module);
  HEXIR_ASSIGN_OR_RETURN(s->devices_, CreateDevices(options));
  HEXIR_RETURN_IF_ERROR(hal::CheckModuleDevices(*s->module_, s->devices_)
                            .WithContext(StrCat("module file '", module_path, "'")));
  s->context_ = vm::Context::Create();
  HEXIR_RETURN_IF_ERROR(s->context_->RegisterNativeModule(hal::CreateHalModule(s->devices_)));
  Status st = s->context_->LoadModule(*s->module_);
  if (!st.ok()) return std::move(st).WithContext(StrCat("module '", module_path, "'"));
  return s;
}

StatusOr<vm::Function> Session::LookupFunction(const std::string& name) const {
  return context_->LookupFunction(name);
}

Status Session::Call(const vm::Function& fn, const std::vector<HostValue>& inputs,
                     std::vector<HostValue>* results, const vm::InvokeOptions& options) {
  return CallFunction(*context_, devices_, fn, inputs, {}, results, options);
}

Status Session::Call(const vm::Function& fn, const std::vector<HostValue>& inputs,
                     const std::vector<vm::Ref<hal::BufferView>>& trailing,
                     std::vector<HostValue>* results, const vm::InvokeOptions& options) {
  return CallFunction(*context_, devices_, fn, inputs, trailing, results, options);
}

StatusOr<std::vector<size_t>> ArgumentDevices(const vm::Function& fn, size_t device_count) {
  const size_t us = fn.signature.find('_');
  std::vector<size_t> arg_devices(us == std::string::npos ? fn.signature.size() : us, 0);
  if (std::string text(fn.attr("abi.arg_devices")); !text.empty()) {
    size_t i = 0, start = 0;
    while (start <= text.size() && i < arg_devices.size()) {
      size_t semi = text.find(';', start);
      if (semi == std::string::npos) semi = text.size();
      size_t ordinal = std::strtoul(text.c_str() + start, nullptr, 10);
      if (ordinal >= device_count) {
        return InvalidArgument("function '", fn.name, "': argument ", i, " lives on device ",
                               ordinal, ", which is not bound (", device_count,
                               " device(s) given)");
      }
      arg_devices[i++] = ordinal;
      start = semi + 1;
    }
  }
  return arg_devices;
}

Status CallFunction(vm::Context& context, const std::vector<vm::Ref<hal::Device>>& devices,
                    const vm::Function& fn, const std::vector<HostValue>& inputs,
                    std::vector<HostValue>* results, const vm::InvokeOptions& options) {
  return CallFunction(context, devices, fn, inputs, {}, results, options);
}

Status CallFunction(vm::Context& context, const std::vector<vm::Ref<hal::Device>>& devices,
                    const vm::Function& fn, const std::vector<HostValue>& inputs,
                    const std::vector<vm::Ref<hal::BufferView>>& trailing,
                    std::vector<HostValue>* results, const vm::InvokeOptions& options) {
  size_t us = fn.signature.find('_');
  std::string arg_kinds = fn.signature.substr(0, us);
  std::string result_kinds = us == std::string::npos ? "" : fn.signature.substr(us + 1);
  HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> arg_types, ParseAbiTypes(std::string(fn.attr("abi.args"))));
  HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> result_types, ParseAbiTypes(std::string(fn.attr("abi.results"))));
  if (inputs.size() + trailing.size() != arg_kinds.size()) {
    return InvalidArgument("function '", fn.name, "' expects ", arg_kinds.size() - std::min(arg_kinds.size(), trailing.size()),
                           " inputs", trailing.empty() ? "" : StrCat(" before its ", trailing.size(), " parameters"),
                           arg_types.empty() ? "" : " (" + ListTypes(arg_types) + ")", ", got ",
                           inputs.size());
  }
  HEXIR_ASSIGN_OR_RETURN(std::vector<size_t> arg_devices, ArgumentDevices(fn, devices.size()));
  std::vector<vm::Variant> args(inputs.size() + trailing.size());
  for (size_t j = 0; j < trailing.size(); ++j) args[inputs.size() + j].ref = trailing[j];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostValue& in = inputs[i];
    const char kind = arg_kinds[i];
    std::string expected = i < arg_types.size() ? arg_types[i].text : std::string(1, kind);
    if (kind == 'r') {
      if (in.kind != HostValue::Kind::kTensor) {
        return InvalidArgument("input ", i, ": expected ", expected, ", got scalar ", DescribeType(in));
      }
      HEXIR_ASSIGN_OR_RETURN(
          auto view, hal::BufferViewFromHost(*devices[arg_devices[i]], in.tensor.element_type,
                                             Span<const int64_t>(in.tensor.dims.data(), in.tensor.dims.size()),
                                             in.tensor.bytes.data(), in.tensor.bytes.size()));
      args[i].ref = std::move(view);
    } else if (in.kind == HostValue::Kind::kTensor) {
      return InvalidArgument("input ", i, ": expected scalar ", expected, ", got tensor ", DescribeType(in));
    } else if (kind == 'i') {
      if (in.kind != HostValue::Kind::kInt) {
        return InvalidArgument("input ", i, ": expected ", expected, ", got ", DescribeType(in));
      }
      args[i].bits = in.i;
    } else {  // 'f': f64 bits
      if (in.kind != HostValue::Kind::kFloat) {
        return InvalidArgument("input ", i, ": expected ", expected, ", got ", DescribeType(in));
      }
      std::memcpy(&args[i].bits, &in.f, 8);
    }
    if (i < arg_types.size() && !arg_types[i].is_tensor && arg_types[i].element_type != in.scalar_type) {
      return InvalidArgument("input ", i, ": expected ", expected, ", got ", DescribeType(in));
    }
  }
  std::vector<vm::Variant> outs;
  const Interrupt download_deadline(options.deadline_ns, nullptr, Interrupt::NowNs());
  HEXIR_RETURN_IF_ERROR(
      context.Invoke(fn, Span<vm::Variant>(args.data(), args.size()), &outs, options));
  results->clear();
  for (size_t i = 0; i < outs.size() && i < result_kinds.size(); ++i) {
    HostValue v;
    char kind = result_kinds[i];
    if (kind == 'r') {
      auto* view = vm::RefCast<hal::BufferView>(outs[i].ref.get());
      if (!view) return Internal("result ", i, " of '", fn.name, "' is not a buffer view");
      v.kind = HostValue::Kind::kTensor;
      v.tensor.element_type = view->element_type();
      v.tensor.dims = view->dims();
      HEXIR_RETURN_IF_ERROR(
          hal::BufferViewToHost(*devices[0], *view, &v.tensor.bytes, download_deadline)
              .WithContext(StrCat("result ", i, " of function '", fn.name, "'")));
    } else if (kind == 'i') {
      v.kind = HostValue::Kind::kInt;
      v.i = outs[i].bits;
      v.scalar_type = i < result_types.size() ? result_types[i].element_type
                                              : static_cast<int32_t>(hal::ElementType::kI64);
    } else {
      v.kind = HostValue::Kind::kFloat;
      std::memcpy(&v.f, &outs[i].bits, 8);
      v.scalar_type = i < result_types.size() ? result_types[i].element_type
                                              : static_cast<int32_t>(hal::ElementType::kF64);
    }
    results->push_back(std::move(v));
  }
  return Status::Ok();
}

}  // namespace hexir::tools
