// The C API of runtime/hexir_runtime.h over the C++ API (vm/api.h, hal/api.h); the handles
// and error helpers are in c_api_handles.h, the rank groups in hexir_rank_group.cc.
#include "runtime/hexir_runtime.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "hal/module/hal_module.h"
#include "runtime/c_api_handles.h"

using hexir::Status;
using hexir::StatusCode;

namespace {

using hexir::runtime::c_api::Fail;
using hexir::runtime::c_api::last_error;

static_assert(HEXIR_INTERNAL == static_cast<int>(StatusCode::kInternal), "status codes");
// The C enum repeats hal/element_types.def (the header stays C89 and self-contained): every
// row must have its HEXIR_ELEMENT_<Name> with the same code.
#define HEXIR_ELEMENT_TYPE(Name, code, spelling, bytes, is_float) \
  static_assert(HEXIR_ELEMENT_##Name == code, "hexir_runtime.h: HEXIR_ELEMENT_" #Name " differs from hal/element_types.def");
#include "hal/element_types.def"
#undef HEXIR_ELEMENT_TYPE
static_assert(HEXIR_NO_DEADLINE == hexir::Interrupt::kNoDeadline, "no deadline");

}  // namespace

hexir_status_t hexir::runtime::c_api::CheckArgumentKinds(const vm::Function& fn, const hexir_values_t& args) {
  const std::string& sig = fn.signature;
  std::string_view arg_kinds = std::string_view(sig).substr(0, sig.find('_'));
  if (args.kinds.size() != arg_kinds.size()) {
    return Fail(StatusCode::kInvalidArgument, "function '", fn.name, "' (signature '", sig, "') takes ",
                arg_kinds.size(), " arguments, got ", args.kinds.size());
  }
  for (size_t i = 0; i < arg_kinds.size(); ++i) {
    if (args.kinds[i] != arg_kinds[i]) {
      return Fail(StatusCode::kInvalidArgument, "function '", fn.name, "' argument ", i, ": signature '", sig,
                  "' wants '", arg_kinds[i], "', got '", args.kinds[i], "'");
    }
  }
  return HEXIR_OK;
}

extern "C" {

const char* hexir_last_error(void) { return last_error.c_str(); }

const char* hexir_status_name(hexir_status_t status) {
  if (status < HEXIR_OK || status > HEXIR_INTERNAL) return "unknown";
  return hexir::StatusCodeName(static_cast<StatusCode>(status));
}

hexir_status_t hexir_instance_create(hexir_instance_t** out_instance) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(out_instance);
  *out_instance = new hexir_instance();
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
void hexir_instance_release(hexir_instance_t* instance) { delete instance; }

hexir_status_t hexir_device_create(hexir_instance_t* instance, const char* uri,
                                   hexir_device_t** out_device) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_NONNULL(uri);
  HEXIR_C_NONNULL(out_device);
  std::string_view text(uri);
  hexir::hal::DeviceOptions options;
  if (text == "cpu:inline") {
    text = "cpu";
    options.cpu_inline = true;
    options.cpu_worker_count = 0;
  }
  auto device = hexir::hal::CreateDevice(text, options);
  if (!device.ok()) return Fail(device.status());
  *out_device = new hexir_device{std::move(*device)};
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
void hexir_device_release(hexir_device_t* device) { delete device; }

static hexir_status_t WrapModule(hexir::StatusOr<hexir::vm::Ref<hexir::vm::Module>> loaded,
                                 hexir_module_t** out_module) {
  if (!loaded.ok()) return Fail(loaded.status());
  auto* m = new hexir_module{std::move(*loaded), {}};
  m->name = std::string(m->module->name());
  *out_module = m;
  return HEXIR_OK;
}

hexir_status_t hexir_module_load_file(hexir_instance_t* instance, const char* path,
                                      hexir_module_t** out_module) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_NONNULL(path);
  HEXIR_C_NONNULL(out_module);
  return WrapModule(hexir::vm::Module::LoadFromFile(path), out_module);
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_module_load_memory(hexir_instance_t* instance, const void* data,
                                        size_t size, hexir_module_t** out_module) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_REQUIRE(data || size == 0, "null data with size > 0");
  HEXIR_C_NONNULL(out_module);
  return WrapModule(hexir::vm::Module::LoadFromMemory(data, size), out_module);
  HEXIR_C_GUARD_END
}
const char* hexir_module_name(const hexir_module_t* module) {
  return module ? module->name.c_str() : "";
}
void hexir_module_release(hexir_module_t* module) { delete module; }

hexir_status_t hexir_context_create(hexir_instance_t* instance, hexir_device_t* device,
                                    hexir_context_t** out_context) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_NONNULL(device);
  HEXIR_C_NONNULL(out_context);
  return hexir_context_create_with_devices(instance, &device, 1, out_context);
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_context_create_with_devices(hexir_instance_t* instance,
                                                 hexir_device_t* const* devices, size_t count,
                                                 hexir_context_t** out_context) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_NONNULL(devices);
  HEXIR_C_NONNULL(out_context);
  HEXIR_C_REQUIRE(count > 0, "no device given");
  auto c = std::make_unique<hexir_context>();
  for (size_t i = 0; i < count; ++i) {
    if (!devices[i]) return Fail(hexir::InvalidArgument("null devices[", i, "]"));
    c->devices.push_back(devices[i]->device);
  }
  c->context = hexir::vm::Context::Create();
  Status s = c->context->RegisterNativeModule(hexir::hal::CreateHalModule(c->devices));
  if (!s.ok()) return Fail(s);
  *out_context = c.release();
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_context_load_module(hexir_context_t* context, hexir_module_t* module) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(context);
  HEXIR_C_NONNULL(module);
  Status s = hexir::hal::CheckModuleDevices(*module->module, context->devices);
  if (s.ok()) s = context->context->LoadModule(*module->module);
  if (!s.ok()) return Fail(s);
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
void hexir_context_release(hexir_context_t* context) { delete context; }

hexir_status_t hexir_context_lookup_function(hexir_context_t* context, const char* name,
                                             hexir_function_t** out_function) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(context);
  HEXIR_C_NONNULL(name);
  HEXIR_C_NONNULL(out_function);
  auto fn = context->context->LookupFunction(name);
  if (!fn.ok()) return Fail(fn.status());
  auto* f = new hexir_function{std::move(*fn), {}};
  f->module = hexir::vm::Ref<hexir::vm::Module>::Retain(
      const_cast<hexir::vm::Module*>(f->function.module));
  *out_function = f;
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
const char* hexir_function_signature(const hexir_function_t* function) {
  return function ? function->function.signature.c_str() : "";
}
const char* hexir_function_attr(const hexir_function_t* function, const char* key) {
  if (!function || !key) return nullptr;
  for (const auto& [k, v] : function->function.attrs) {
    if (k == key) return v.c_str();
  }
  return nullptr;
}
void hexir_function_release(hexir_function_t* function) { delete function; }

hexir_status_t hexir_function_call(hexir_context_t* context, hexir_function_t* function,
                                   const hexir_values_t* args, hexir_values_t* results) {
  return hexir_function_call_with_deadline(context, function, args, results, HEXIR_NO_DEADLINE);
}

int64_t hexir_clock_now_ns(void) { return hexir::Interrupt::NowNs(); }

hexir_status_t hexir_context_cancel(hexir_context_t* context) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(context);
  context->context->Cancel();
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

hexir_status_t hexir_function_call_with_deadline(hexir_context_t* context,
                                                 hexir_function_t* function,
                                                 const hexir_values_t* args,
                                                 hexir_values_t* results, int64_t deadline_ns) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(context);
  HEXIR_C_NONNULL(function);
  HEXIR_C_NONNULL(args);
  HEXIR_C_NONNULL(results);
  if (hexir_status_t bad = hexir::runtime::c_api::CheckArgumentKinds(function->function, *args)) return bad;
  const std::string& sig = function->function.signature;
  const size_t us = sig.find('_');
  std::string_view result_kinds =
      us == std::string::npos ? std::string_view() : std::string_view(sig).substr(us + 1);
  // Invoke retains refs and never consumes args: a copy keeps `args` const for the caller.
  std::vector<hexir::vm::Variant> in = args->values;
  std::vector<hexir::vm::Variant> out;
  hexir::vm::InvokeOptions options;
  options.deadline_ns = deadline_ns;
  Status s = context->context->Invoke(
      function->function, hexir::Span<hexir::vm::Variant>(in.data(), in.size()), &out, options);
  if (!s.ok()) return Fail(s);
  results->kinds.assign(result_kinds.begin(), result_kinds.end());
  results->values = std::move(out);
  results->values.resize(results->kinds.size());
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

hexir_status_t hexir_values_create(hexir_values_t** out_values) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(out_values);
  *out_values = new hexir_values();
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
void hexir_values_release(hexir_values_t* values) { delete values; }
void hexir_values_clear(hexir_values_t* values) {
  if (!values) return;
  values->kinds.clear();
  values->values.clear();
}
size_t hexir_values_size(const hexir_values_t* values) {
  return values ? values->kinds.size() : 0;
}

static hexir_status_t Push(hexir_values_t* values, char kind, int64_t bits,
                           hexir::vm::Ref<hexir::vm::RefObject> ref) {
  values->kinds.push_back(kind);
  hexir::vm::Variant v;
  v.bits = bits;
  v.ref = std::move(ref);
  values->values.push_back(std::move(v));
  return HEXIR_OK;
}
hexir_status_t hexir_values_push_i64(hexir_values_t* values, int64_t value) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(values);
  return Push(values, 'i', value, nullptr);
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_values_push_f64(hexir_values_t* values, double value) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(values);
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return Push(values, 'f', bits, nullptr);
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_values_push_buffer_view(hexir_values_t* values,
                                             hexir_buffer_view_t* view) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(values);
  HEXIR_C_NONNULL(view);
  return Push(values, 'r', 0, view->view);
  HEXIR_C_GUARD_END
}

// Entry `index` of kind `kind`, or an error naming the index and both kinds.
static hexir_status_t Entry(const hexir_values_t* values, size_t index, char kind,
                            const hexir::vm::Variant** out) {
  if (!values) return Fail(StatusCode::kInvalidArgument, "null values");
  if (index >= values->kinds.size()) {
    return Fail(StatusCode::kOutOfRange, "value index ", index, " out of range (size ",
                values->kinds.size(), ")");
  }
  if (kind && values->kinds[index] != kind) {
    return Fail(StatusCode::kInvalidArgument, "value ", index, " is '", values->kinds[index],
                "', not '", kind, "'");
  }
  *out = &values->values[index];
  return HEXIR_OK;
}

hexir_status_t hexir_values_kind(const hexir_values_t* values, size_t index,
                                 hexir_value_kind_t* out_kind) {
  HEXIR_C_GUARD_BEGIN
  const hexir::vm::Variant* v;
  if (hexir_status_t s = Entry(values, index, 0, &v)) return s;
  HEXIR_C_NONNULL(out_kind);
  *out_kind = static_cast<hexir_value_kind_t>(values->kinds[index]);
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
// The 64 bits of scalar entry `index` ('i' or 'f') into *out_value (an int64_t or a double);
// errors name `function`, the entry point.
static hexir_status_t GetScalarBits(const char* function, const hexir_values_t* values,
                                    size_t index, char kind, void* out_value) {
  HEXIR_C_GUARD_BEGIN
  const hexir::vm::Variant* v;
  if (hexir_status_t s = Entry(values, index, kind, &v)) return s;
  if (!out_value) return Fail(StatusCode::kInvalidArgument, function, ": null out_value");
  std::memcpy(out_value, &v->bits, sizeof(v->bits));
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_values_get_i64(const hexir_values_t* values, size_t index,
                                    int64_t* out_value) {
  return GetScalarBits(__func__, values, index, 'i', out_value);
}
hexir_status_t hexir_values_get_f64(const hexir_values_t* values, size_t index,
                                    double* out_value) {
  return GetScalarBits(__func__, values, index, 'f', out_value);
}
hexir_status_t hexir_values_get_buffer_view(const hexir_values_t* values, size_t index,
                                            hexir_buffer_view_t** out_view) {
  HEXIR_C_GUARD_BEGIN
  const hexir::vm::Variant* v;
  if (hexir_status_t s = Entry(values, index, 'r', &v)) return s;
  HEXIR_C_NONNULL(out_view);
  auto* view = hexir::vm::RefCast<hexir::hal::BufferView>(v->ref.get());
  if (!view) {
    return Fail(StatusCode::kInvalidArgument, "value ", index, " is ",
                v->ref ? v->ref->type_name() : "null", ", not a hal.buffer_view");
  }
  *out_view = new hexir_buffer_view{hexir::vm::Ref<hexir::hal::BufferView>::Retain(view)};
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

hexir_status_t hexir_buffer_view_from_host(hexir_device_t* device,
                                           hexir_element_type_t element_type,
                                           const int64_t* dims, size_t rank, const void* data,
                                           size_t byte_size, hexir_buffer_view_t** out_view) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(device);
  HEXIR_C_REQUIRE(dims || rank == 0, "null dims with rank > 0");
  HEXIR_C_REQUIRE(data || byte_size == 0, "null data with byte_size > 0");
  HEXIR_C_NONNULL(out_view);
  auto view = hexir::hal::BufferViewFromHost(*device->device, element_type,
                                             hexir::Span<const int64_t>(dims, rank), data,
                                             byte_size);
  if (!view.ok()) return Fail(view.status());
  *out_view = new hexir_buffer_view{std::move(*view)};
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
hexir_status_t hexir_buffer_view_to_host(hexir_device_t* device, hexir_buffer_view_t* view,
                                         void* data, size_t capacity) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(device);
  HEXIR_C_NONNULL(view);
  HEXIR_C_REQUIRE(data || capacity == 0, "null data with capacity > 0");
  if (capacity < view->view->byte_size()) {
    return Fail(StatusCode::kOutOfRange, "buffer view ", view->view->ShapeString(), " has ",
                view->view->byte_size(), " bytes; the destination holds ", capacity);
  }
  std::vector<uint8_t> bytes;
  Status s = hexir::hal::BufferViewToHost(*device->device, *view->view, &bytes);
  if (!s.ok()) return Fail(s);
  if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}
hexir_element_type_t hexir_buffer_view_element_type(const hexir_buffer_view_t* view) {
  return static_cast<hexir_element_type_t>(view ? view->view->element_type() : 0);
}
size_t hexir_buffer_view_rank(const hexir_buffer_view_t* view) {
  return view ? view->view->rank() : 0;
}
int64_t hexir_buffer_view_dim(const hexir_buffer_view_t* view, size_t axis) {
  if (!view || axis >= view->view->rank()) return -1;
  return view->view->dim(axis);
}
size_t hexir_buffer_view_byte_size(const hexir_buffer_view_t* view) {
  return view ? static_cast<size_t>(view->view->byte_size()) : 0;
}
void hexir_buffer_view_release(hexir_buffer_view_t* view) { delete view; }

hexir_status_t hexir_parameters_open(hexir_instance_t* instance, const char* path,
                                     hexir_parameters_t** out_parameters) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_NONNULL(path);
  HEXIR_C_NONNULL(out_parameters);
  auto file = hexir::tools::ParameterFile::Open(path);
  if (!file.ok()) return Fail(file.status());
  auto* p = new hexir_parameters();
  p->file = std::move(*file);
  *out_parameters = p;
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

size_t hexir_parameters_count(const hexir_parameters_t* parameters) {
  return parameters ? parameters->file->tensors().size() : 0;
}

const char* hexir_parameters_name(const hexir_parameters_t* parameters, size_t index) {
  if (!parameters || index >= parameters->file->tensors().size()) return nullptr;
  return parameters->file->tensors()[index].name.c_str();
}

hexir_status_t hexir_values_push_parameters(hexir_values_t* values, hexir_device_t* device,
                                            hexir_function_t* function,
                                            hexir_parameters_t* parameters) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(values);
  HEXIR_C_NONNULL(device);
  HEXIR_C_NONNULL(function);
  HEXIR_C_NONNULL(parameters);
  const hexir::tools::ParameterFile& file = *parameters->file;
  const hexir::vm::Function& fn = function->function;
  auto args = file.CheckFunction(fn);
  if (!args.ok()) return Fail(args.status());
  if (values->kinds.size() != file.first_argument())
    return Fail(StatusCode::kInvalidArgument, "function '", fn.name, "': the parameters of '",
                file.path(), "' follow ", file.first_argument(), " inputs, the list holds ",
                values->kinds.size());
  std::vector<hexir::vm::Ref<hexir::hal::BufferView>> views;
  {
    std::lock_guard<std::mutex> lock(parameters->mu);
    auto it = parameters->uploaded.find(device->device.get());
    if (it == parameters->uploaded.end()) {
      auto uploaded = file.Upload(*device->device, *args);
      if (!uploaded.ok()) return Fail(uploaded.status());
      it = parameters->uploaded.emplace(device->device.get(), std::make_pair(device->device, std::move(*uploaded))).first;
    }
    views = it->second.second;
  }
  for (auto& v : views) {
    hexir_status_t pushed = Push(values, 'r', 0, v);
    if (pushed != HEXIR_OK) return pushed;
  }
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

void hexir_parameters_release(hexir_parameters_t* parameters) { delete parameters; }

}  // extern "C"
