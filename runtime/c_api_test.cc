// The C API against a module built with vm/testing/builder (no compiler): handles, values,
// buffer views, error codes and messages, and handle lifetimes.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/hexir_runtime.h"
#include "vm/testing/builder.h"

namespace {

using hexir::vm::Op;
using hexir::vm::testing::ModuleBuilder;
using hexir::vm::testing::R;
using hexir::vm::testing::V;

std::vector<uint8_t> TestModule() {
  ModuleBuilder mb("capi");
  uint32_t dim = mb.AddImport("hal.buffer_view.dim", "ri_i");
  uint32_t msg = mb.AddString("kaboom");
  // main(view, axis) -> (dim(view, axis), view, 2.5)
  auto& f = mb.AddFunction("main", "ri_irf");
  f.AddAttr("abi.args", "tensor<?x?xf32>;i64");
  f.Op(Op::CallImport).M(dim).L({R(0), V(0)}).L({V(1)});
  f.Op(Op::ConstF64).V(2).KF(2.5);
  f.Op(Op::Return).L({V(1), R(0), V(2)});
  mb.AddExport("main", f.ordinal());
  auto& boom = mb.AddFunction("boom", "_");
  boom.Op(Op::ConstI64).V(0).K(10);
  boom.Op(Op::Fail).V(0).S(msg);
  mb.AddExport("boom", boom.ordinal());
  auto bytes = mb.Build();
  REQUIRE(bytes.ok());
  return *bytes;
}

std::string LastError() { return hexir_last_error(); }

TEST_CASE("C API: load from memory, call with a buffer view, read every result kind") {
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* device = nullptr;
  REQUIRE(hexir_device_create(instance, "cpu:inline", &device) == HEXIR_OK);
  hexir_context_t* context = nullptr;
  REQUIRE(hexir_context_create(instance, device, &context) == HEXIR_OK);
  std::vector<uint8_t> bytes = TestModule();
  hexir_module_t* module = nullptr;
  REQUIRE(hexir_module_load_memory(instance, bytes.data(), bytes.size(), &module) == HEXIR_OK);
  CHECK(std::string(hexir_module_name(module)) == "capi");
  REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
  hexir_module_release(module);  // the context keeps its own reference

  hexir_function_t* fn = nullptr;
  REQUIRE(hexir_context_lookup_function(context, "main", &fn) == HEXIR_OK);
  CHECK(std::string(hexir_function_signature(fn)) == "ri_irf");
  CHECK(std::string(hexir_function_attr(fn, "abi.args")) == "tensor<?x?xf32>;i64");
  CHECK(hexir_function_attr(fn, "abi.nothing") == nullptr);

  const float data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  hexir_buffer_view_t* view = nullptr;
  REQUIRE(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 2, data, sizeof(data),
                                      &view) == HEXIR_OK);
  hexir_values_t* args = nullptr;
  hexir_values_t* results = nullptr;
  REQUIRE(hexir_values_create(&args) == HEXIR_OK);
  REQUIRE(hexir_values_create(&results) == HEXIR_OK);

  // Wrong kinds are refused before the VM runs.
  REQUIRE(hexir_values_push_i64(args, 1) == HEXIR_OK);
  REQUIRE(hexir_values_push_i64(args, 1) == HEXIR_OK);
  CHECK(hexir_function_call(context, fn, args, results) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError() ==
        "function 'main' argument 0: signature 'ri_irf' wants 'r', got 'i'");
  hexir_values_clear(args);
  REQUIRE(hexir_values_push_buffer_view(args, view) == HEXIR_OK);
  CHECK(hexir_function_call(context, fn, args, results) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError().find("takes 2 arguments, got 1") != std::string::npos);
  REQUIRE(hexir_values_push_i64(args, 1) == HEXIR_OK);

  REQUIRE(hexir_function_call(context, fn, args, results) == HEXIR_OK);
  REQUIRE(hexir_values_size(results) == 3);
  hexir_value_kind_t kind;
  REQUIRE(hexir_values_kind(results, 1, &kind) == HEXIR_OK);
  CHECK(kind == HEXIR_VALUE_REF);
  int64_t d = 0;
  REQUIRE(hexir_values_get_i64(results, 0, &d) == HEXIR_OK);
  CHECK(d == 3);
  double f = 0;
  REQUIRE(hexir_values_get_f64(results, 2, &f) == HEXIR_OK);
  CHECK(f == 2.5);
  CHECK(hexir_values_get_i64(results, 1, &d) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError() == "value 1 is 'r', not 'i'");
  CHECK(hexir_values_get_f64(results, 3, &f) == HEXIR_OUT_OF_RANGE);
  CHECK(LastError() == "value index 3 out of range (size 3)");

  hexir_buffer_view_t* out = nullptr;
  REQUIRE(hexir_values_get_buffer_view(results, 1, &out) == HEXIR_OK);
  CHECK(hexir_buffer_view_element_type(out) == HEXIR_ELEMENT_F32);
  CHECK(hexir_buffer_view_rank(out) == 2);
  CHECK(hexir_buffer_view_dim(out, 1) == 3);
  CHECK(hexir_buffer_view_dim(out, 2) == -1);
  CHECK(hexir_buffer_view_byte_size(out) == sizeof(data));
  float back[6] = {};
  CHECK(hexir_buffer_view_to_host(device, out, back, 8) == HEXIR_OUT_OF_RANGE);
  CHECK(LastError() ==
        "buffer view 2x3xf32 has 24 bytes; the destination holds 8");
  REQUIRE(hexir_buffer_view_to_host(device, out, back, sizeof(back)) == HEXIR_OK);
  CHECK(std::memcmp(back, data, sizeof(data)) == 0);

  // A failing import is named once, after the function and offset (not once by the HAL module
  // and again by the interpreter).
  hexir_values_t* bad_axis = nullptr;
  hexir_values_t* no_results = nullptr;
  REQUIRE(hexir_values_create(&bad_axis) == HEXIR_OK);
  REQUIRE(hexir_values_create(&no_results) == HEXIR_OK);
  REQUIRE(hexir_values_push_buffer_view(bad_axis, view) == HEXIR_OK);
  REQUIRE(hexir_values_push_i64(bad_axis, 2) == HEXIR_OK);
  CHECK(hexir_function_call(context, fn, bad_axis, no_results) == HEXIR_OUT_OF_RANGE);
  CHECK(LastError() ==
        "function 'main' @0: hal.buffer_view.dim: dim index 2 is out of range for 2x3xf32 (rank 2)");
  hexir_values_release(bad_axis);
  hexir_values_release(no_results);

  // Releasing the caller's handles leaves the results' own references intact.
  hexir_buffer_view_release(view);
  hexir_buffer_view_release(out);
  hexir_device_release(device);  // the context retains the device
  REQUIRE(hexir_function_call(context, fn, results, results) == HEXIR_INVALID_ARGUMENT);

  hexir_function_t* boom = nullptr;
  REQUIRE(hexir_context_lookup_function(context, "boom", &boom) == HEXIR_OK);
  hexir_values_clear(args);
  CHECK(hexir_function_call(context, boom, args, results) == HEXIR_ABORTED);
  CHECK(LastError() == "function 'boom' @4: kaboom");

  hexir_function_t* missing = nullptr;
  CHECK(hexir_context_lookup_function(context, "nope", &missing) == HEXIR_NOT_FOUND);
  CHECK(missing == nullptr);
  CHECK(LastError() == "function 'nope' is not exported by any loaded module");

  hexir_function_release(boom);
  hexir_function_release(fn);
  hexir_values_release(args);
  hexir_values_release(results);
  hexir_context_release(context);
  hexir_instance_release(instance);
}

TEST_CASE("C API: creation and load errors return codes with messages") {
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* device = nullptr;
  CHECK(hexir_device_create(instance, "tpu", &device) == HEXIR_NOT_FOUND);
  CHECK(LastError().find("no HAL driver for device uri 'tpu'") != std::string::npos);
  CHECK(device == nullptr);
  hexir_module_t* module = nullptr;
  CHECK(hexir_module_load_file(instance, "/nonexistent/m.vmfb", &module) == HEXIR_NOT_FOUND);
  CHECK(LastError() == "module file '/nonexistent/m.vmfb' does not exist");
  const char junk[] = "not a module at all";
  CHECK(hexir_module_load_memory(instance, junk, sizeof(junk), &module) == HEXIR_DATA_LOSS);
  CHECK(LastError() == "not a .vmfb module (bad magic at offset 0)");
  CHECK(module == nullptr);
  CHECK(hexir_module_load_memory(instance, nullptr, 0, nullptr) == HEXIR_INVALID_ARGUMENT);
  CHECK(std::string(hexir_status_name(HEXIR_UNAVAILABLE)) == "unavailable");

  REQUIRE(hexir_device_create(instance, "cpu", &device) == HEXIR_OK);
  const int64_t dims[1] = {4};
  const float data[3] = {1, 2, 3};
  hexir_buffer_view_t* view = nullptr;
  CHECK(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, data, sizeof(data),
                                    &view) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError().find("4xf32") != std::string::npos);
  hexir_device_release(device);
  hexir_instance_release(instance);
}

// Every entry point given NULL for each handle or pointer: a status (or the documented empty
// answer), never a crash, and the message names the argument ("hexir_device_create: null uri").
TEST_CASE("C API: NULL handles and out-pointers are refused by name, never dereferenced") {
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* device = nullptr;
  REQUIRE(hexir_device_create(instance, "cpu:inline", &device) == HEXIR_OK);
  hexir_context_t* context = nullptr;
  REQUIRE(hexir_context_create(instance, device, &context) == HEXIR_OK);
  std::vector<uint8_t> bytes = TestModule();
  hexir_module_t* module = nullptr;
  REQUIRE(hexir_module_load_memory(instance, bytes.data(), bytes.size(), &module) == HEXIR_OK);
  REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
  hexir_function_t* fn = nullptr;
  REQUIRE(hexir_context_lookup_function(context, "main", &fn) == HEXIR_OK);
  hexir_values_t* values = nullptr;
  REQUIRE(hexir_values_create(&values) == HEXIR_OK);
  const int64_t dims[1] = {2};
  const float data[2] = {1, 2};
  hexir_buffer_view_t* view = nullptr;
  REQUIRE(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, data, sizeof(data), &view) == HEXIR_OK);
  int64_t i = 0;
  hexir_value_kind_t kind;
  hexir_buffer_view_t* out_view = nullptr;
  hexir_parameters_t* parameters = nullptr;
  hexir_rank_group_t* group = nullptr;

  auto refused = [](hexir_status_t status) {
    INFO(hexir_last_error());
    CHECK(status == HEXIR_INVALID_ARGUMENT);
    CHECK(std::string(hexir_last_error()).find("null ") != std::string::npos);
    CHECK(std::string(hexir_last_error()).find("null argument") == std::string::npos);
  };
  refused(hexir_instance_create(nullptr));
  refused(hexir_device_create(nullptr, "cpu", &device));
  hexir_device_t* unused_device = nullptr;
  refused(hexir_device_create(instance, nullptr, &unused_device));
  refused(hexir_device_create(instance, "cpu", nullptr));
  refused(hexir_module_load_file(nullptr, "x.vmfb", &module));
  refused(hexir_module_load_file(instance, nullptr, &module));
  refused(hexir_module_load_file(instance, "x.vmfb", nullptr));
  refused(hexir_module_load_memory(nullptr, bytes.data(), bytes.size(), &module));
  refused(hexir_module_load_memory(instance, nullptr, 16, &module));
  refused(hexir_context_create(nullptr, device, &context));
  refused(hexir_context_create(instance, nullptr, &context));
  refused(hexir_context_create(instance, device, nullptr));
  refused(hexir_context_create_with_devices(instance, nullptr, 1, &context));
  hexir_device_t* null_device = nullptr;
  refused(hexir_context_create_with_devices(instance, &null_device, 1, &context));
  refused(hexir_context_load_module(nullptr, module));
  refused(hexir_context_load_module(context, nullptr));
  refused(hexir_context_lookup_function(nullptr, "main", &fn));
  refused(hexir_context_lookup_function(context, nullptr, &fn));
  refused(hexir_context_lookup_function(context, "main", nullptr));
  refused(hexir_function_call(nullptr, fn, values, values));
  refused(hexir_function_call(context, nullptr, values, values));
  refused(hexir_function_call(context, fn, nullptr, values));
  refused(hexir_function_call(context, fn, values, nullptr));
  refused(hexir_function_call_with_deadline(context, fn, values, nullptr, HEXIR_NO_DEADLINE));
  refused(hexir_context_cancel(nullptr));
  refused(hexir_values_create(nullptr));
  refused(hexir_values_push_i64(nullptr, 1));
  refused(hexir_values_push_f64(nullptr, 1));
  refused(hexir_values_push_buffer_view(nullptr, view));
  refused(hexir_values_push_buffer_view(values, nullptr));
  REQUIRE(hexir_values_push_i64(values, 7) == HEXIR_OK);
  REQUIRE(hexir_values_push_f64(values, 1.5) == HEXIR_OK);
  REQUIRE(hexir_values_push_buffer_view(values, view) == HEXIR_OK);
  refused(hexir_values_kind(nullptr, 0, &kind));
  refused(hexir_values_kind(values, 0, nullptr));
  refused(hexir_values_get_i64(nullptr, 0, &i));
  refused(hexir_values_get_i64(values, 0, nullptr));
  refused(hexir_values_get_f64(values, 1, nullptr));
  refused(hexir_values_get_buffer_view(values, 2, nullptr));
  refused(hexir_buffer_view_from_host(nullptr, HEXIR_ELEMENT_F32, dims, 1, data, sizeof(data), &out_view));
  refused(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, nullptr, 1, data, sizeof(data), &out_view));
  refused(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, nullptr, sizeof(data), &out_view));
  refused(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, data, sizeof(data), nullptr));
  float back[2];
  refused(hexir_buffer_view_to_host(nullptr, view, back, sizeof(back)));
  refused(hexir_buffer_view_to_host(device, nullptr, back, sizeof(back)));
  refused(hexir_buffer_view_to_host(device, view, nullptr, sizeof(back)));
  refused(hexir_parameters_open(nullptr, "p.gguf", &parameters));
  refused(hexir_parameters_open(instance, nullptr, &parameters));
  refused(hexir_parameters_open(instance, "p.gguf", nullptr));
  refused(hexir_values_push_parameters(values, device, fn, nullptr));
  refused(hexir_values_push_parameters(nullptr, device, fn, nullptr));
  refused(hexir_rank_group_create(nullptr, module, &device, 1, &group));
  refused(hexir_rank_group_create(instance, nullptr, &device, 1, &group));
  refused(hexir_rank_group_create(instance, module, &device, 1, nullptr));
  refused(hexir_rank_group_call(nullptr, "main", nullptr, values, HEXIR_NO_DEADLINE));

  // Queries and releases of NULL answer the documented empty value and do nothing.
  CHECK(hexir_module_name(nullptr) != nullptr);
  CHECK(hexir_function_signature(nullptr) != nullptr);
  CHECK(hexir_function_attr(nullptr, "abi.args") == nullptr);
  CHECK(hexir_function_attr(fn, nullptr) == nullptr);
  CHECK(hexir_values_size(nullptr) == 0);
  CHECK(hexir_buffer_view_rank(nullptr) == 0);
  CHECK(hexir_buffer_view_dim(nullptr, 0) == -1);
  CHECK(hexir_buffer_view_byte_size(nullptr) == 0);
  CHECK(hexir_parameters_count(nullptr) == 0);
  CHECK(hexir_parameters_name(nullptr, 0) == nullptr);
  CHECK(hexir_rank_group_size(nullptr) == 0);
  CHECK(hexir_status_name(static_cast<hexir_status_t>(999)) != nullptr);
  hexir_values_clear(nullptr);
  hexir_instance_release(nullptr);
  hexir_device_release(nullptr);
  hexir_module_release(nullptr);
  hexir_context_release(nullptr);
  hexir_function_release(nullptr);
  hexir_values_release(nullptr);
  hexir_buffer_view_release(nullptr);
  hexir_parameters_release(nullptr);
  hexir_rank_group_release(nullptr);

  hexir_buffer_view_release(view);
  hexir_values_release(values);
  hexir_function_release(fn);
  hexir_module_release(module);
  hexir_context_release(context);
  hexir_device_release(device);
  hexir_instance_release(instance);
}

// A module corrupted anywhere reaches the embedding program as a status from the load (the
// checksums name the segment), never as a crash of the host process at load or first call.
TEST_CASE("C API: every inverted byte of a module is refused at load or runs correctly") {
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* device = nullptr;
  REQUIRE(hexir_device_create(instance, "cpu:inline", &device) == HEXIR_OK);
  const std::vector<uint8_t> good = TestModule();
  const float data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  hexir_buffer_view_t* view = nullptr;
  REQUIRE(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 2, data, sizeof(data), &view) == HEXIR_OK);
  hexir_values_t* args = nullptr;
  hexir_values_t* results = nullptr;
  REQUIRE(hexir_values_create(&args) == HEXIR_OK);
  REQUIRE(hexir_values_create(&results) == HEXIR_OK);
  REQUIRE(hexir_values_push_buffer_view(args, view) == HEXIR_OK);
  REQUIRE(hexir_values_push_i64(args, 1) == HEXIR_OK);
  size_t refused = 0, ran = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0xff;
    hexir_module_t* module = nullptr;
    hexir_status_t load = hexir_module_load_memory(instance, bad.data(), bad.size(), &module);
    if (load != HEXIR_OK) {
      INFO("byte " << at << ": " << hexir_last_error());
      CHECK(module == nullptr);
      CHECK(std::string(hexir_last_error()).size() > 0);
      ++refused;
      continue;
    }
    // Accepted: the byte is padding outside every checksummed range; the call is exact.
    hexir_context_t* context = nullptr;
    REQUIRE(hexir_context_create(instance, device, &context) == HEXIR_OK);
    hexir_function_t* fn = nullptr;
    INFO("byte " << at);
    REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
    REQUIRE(hexir_context_lookup_function(context, "main", &fn) == HEXIR_OK);
    REQUIRE(hexir_function_call(context, fn, args, results) == HEXIR_OK);
    int64_t d = 0;
    REQUIRE(hexir_values_get_i64(results, 0, &d) == HEXIR_OK);
    CHECK(d == 3);
    ++ran;
    hexir_function_release(fn);
    hexir_context_release(context);
    hexir_module_release(module);
  }
  CHECK(refused > 0.9 * good.size());
  INFO(refused << " refused, " << ran << " ran");
  hexir_values_release(args);
  hexir_values_release(results);
  hexir_buffer_view_release(view);
  hexir_device_release(device);
  hexir_instance_release(instance);
}

}  // namespace

TEST_CASE("C API: a context of several devices binds a module's device list; a missing one is named") {
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* devices[2] = {nullptr, nullptr};
  REQUIRE(hexir_device_create(instance, "cpu", &devices[0]) == HEXIR_OK);
  REQUIRE(hexir_device_create(instance, "cpu:threads=1", &devices[1]) == HEXIR_OK);
  ModuleBuilder mb("two");
  mb.SetDevices({"cpu", "cpu"});
  auto& f = mb.AddFunction("main", "_");
  f.Op(Op::Return).L({});
  mb.AddExport("main", f.ordinal());
  auto bytes = mb.Build();
  REQUIRE(bytes.ok());
  hexir_module_t* module = nullptr;
  REQUIRE(hexir_module_load_memory(instance, bytes->data(), bytes->size(), &module) == HEXIR_OK);

  hexir_context_t* one = nullptr;
  REQUIRE(hexir_context_create(instance, devices[0], &one) == HEXIR_OK);
  CHECK(hexir_context_load_module(one, module) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError().find("module 'two' runs on 2 device(s) (0=cpu 1=cpu): device 1 (cpu) is not "
                         "given (1 device(s) given: cpu)") != std::string::npos);
  hexir_context_release(one);

  hexir_context_t* both = nullptr;
  REQUIRE(hexir_context_create_with_devices(instance, devices, 2, &both) == HEXIR_OK);
  REQUIRE(hexir_context_load_module(both, module) == HEXIR_OK);
  hexir_context_release(both);
  CHECK(hexir_context_create_with_devices(instance, devices, 0, &both) == HEXIR_INVALID_ARGUMENT);

  hexir_module_release(module);
  hexir_device_release(devices[0]);
  hexir_device_release(devices[1]);
  hexir_instance_release(instance);
}
