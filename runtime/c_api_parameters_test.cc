// The C API's parameter files (hexir_parameters_*): a file written by the ONNX importer's
// writer is mapped, pushed after the inputs as the function's last arguments (uploaded once
// per device) and read back by the function; errors name the path and the argument.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/importers/onnx/ParameterFile.h"
#include "runtime/hexir_runtime.h"
#include "vm/testing/builder.h"

namespace {

using hexir::vm::Op;
using hexir::vm::testing::ModuleBuilder;
using hexir::vm::testing::R;

// main(x: tensor<2xf32>, w: tensor<3x2xf32>) -> w
std::vector<uint8_t> ModuleReturningItsParameter() {
  ModuleBuilder mb("params");
  auto& f = mb.AddFunction("main", "rr_r");
  f.AddAttr("abi.args", "tensor<2xf32>;tensor<3x2xf32>");
  f.Op(Op::Return).L({R(1)});
  mb.AddExport("main", f.ordinal());
  auto bytes = mb.Build();
  REQUIRE(bytes.ok());
  return *bytes;
}

std::string WriteParameters(const std::vector<float>& w) {
  ::onnx::TensorProto t;
  t.set_name("layer.weight");
  t.set_data_type(::onnx::TensorProto::FLOAT);
  t.add_dims(3);
  t.add_dims(2);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/c_api_parameters.gguf";
  REQUIRE(hexir::importers::onnx::WriteParameterFile(path, "main", 1, {{&t, "f32"}}, "", nullptr).ok());
  return path;
}

}  // namespace

TEST_CASE("C API: a parameter file is pushed after the inputs and read by the function") {
  const std::vector<float> w = {1.5f, -2.f, 3.25f, 0.f, 7.f, -0.5f};
  std::string path = WriteParameters(w);
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* device = nullptr;
  REQUIRE(hexir_device_create(instance, "cpu:inline", &device) == HEXIR_OK);
  hexir_context_t* context = nullptr;
  REQUIRE(hexir_context_create(instance, device, &context) == HEXIR_OK);
  std::vector<uint8_t> bytes = ModuleReturningItsParameter();
  hexir_module_t* module = nullptr;
  REQUIRE(hexir_module_load_memory(instance, bytes.data(), bytes.size(), &module) == HEXIR_OK);
  REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
  hexir_function_t* fn = nullptr;
  REQUIRE(hexir_context_lookup_function(context, "main", &fn) == HEXIR_OK);

  hexir_parameters_t* parameters = nullptr;
  REQUIRE(hexir_parameters_open(instance, path.c_str(), &parameters) == HEXIR_OK);
  CHECK(hexir_parameters_count(parameters) == 1);
  CHECK(std::string(hexir_parameters_name(parameters, 0)) == "layer.weight");
  CHECK(hexir_parameters_name(parameters, 1) == nullptr);

  hexir_values_t* args = nullptr;
  hexir_values_t* results = nullptr;
  REQUIRE(hexir_values_create(&args) == HEXIR_OK);
  REQUIRE(hexir_values_create(&results) == HEXIR_OK);
  // Before the input: refused, naming the count of inputs the parameters follow.
  CHECK(hexir_values_push_parameters(args, device, fn, parameters) == HEXIR_INVALID_ARGUMENT);
  CHECK(std::string(hexir_last_error()).find("follow 1 inputs, the list holds 0") != std::string::npos);

  const float x[2] = {0.f, 1.f};
  const int64_t xdims[1] = {2};
  hexir_buffer_view_t* xv = nullptr;
  REQUIRE(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, xdims, 1, x, sizeof(x), &xv) == HEXIR_OK);
  for (int call = 0; call < 2; ++call) {  // the second push reuses the first upload
    hexir_values_clear(args);
    REQUIRE(hexir_values_push_buffer_view(args, xv) == HEXIR_OK);
    REQUIRE(hexir_values_push_parameters(args, device, fn, parameters) == HEXIR_OK);
    REQUIRE(hexir_values_size(args) == 2);
    REQUIRE(hexir_function_call(context, fn, args, results) == HEXIR_OK);
    hexir_buffer_view_t* out = nullptr;
    REQUIRE(hexir_values_get_buffer_view(results, 0, &out) == HEXIR_OK);
    CHECK(hexir_buffer_view_rank(out) == 2);
    CHECK(hexir_buffer_view_dim(out, 0) == 3);
    std::vector<float> got(6);
    REQUIRE(hexir_buffer_view_to_host(device, out, got.data(), got.size() * 4) == HEXIR_OK);
    CHECK(got == w);
    hexir_buffer_view_release(out);
  }

  hexir_parameters_t* missing = nullptr;
  CHECK(hexir_parameters_open(instance, "/nonexistent/p.gguf", &missing) == HEXIR_NOT_FOUND);
  CHECK(std::string(hexir_last_error()).find("cannot open parameter file '/nonexistent/p.gguf'") != std::string::npos);
  CHECK(missing == nullptr);

  hexir_buffer_view_release(xv);
  hexir_values_release(args);
  hexir_values_release(results);
  hexir_parameters_release(parameters);
  hexir_function_release(fn);
  hexir_module_release(module);
  hexir_context_release(context);
  hexir_device_release(device);
  hexir_instance_release(instance);
}
