// hexir-run: loads a .vmfb module, calls one function with inputs given on the command
// line, and prints (or saves) its results. See README.md for the flags.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "base/status.h"
#include "hal/api.h"
#include "hal/topology.h"
#include "tools/common/tensor_io.h"
#include "tools/common/invocation.h"
#include "tools/common/parameter_file.h"
#include "tools/common/tool_main.h"

namespace hexir::tools {
namespace {

struct Flags {
  std::string module_path;
  std::vector<std::string> devices;  // by module device ordinal; empty: cpu
  bool list_devices = false;
  std::string function = "main";
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string parameters;  // hexir-import --parameters file: the function's last arguments
  int cpu_threads = -1;
  int repeat = 1;
  double timeout_seconds = 0;  // 0: none
};

// --list-devices: each device, then for every ordered pair the link and a measured bandwidth.
Status ListDevices(const Flags& flags) {
  std::vector<std::string> uris = flags.devices.empty() ? hal::EnumerateDevices() : flags.devices;
  std::vector<vm::Ref<hal::Device>> devices;
  hal::DeviceOptions options;
  if (flags.cpu_threads >= 0) {
    options.cpu_worker_count = flags.cpu_threads;
    options.cpu_inline = flags.cpu_threads == 0;
  }
  for (const std::string& uri : uris) {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<hal::Device> d, hal::CreateDevice(uri, options));
    devices.push_back(std::move(d));
  }
  std::printf("devices (%zu)\n", devices.size());
  for (size_t i = 0; i < devices.size(); ++i) std::printf("  %zu: %s\n", i, uris[i].c_str());
  std::printf("links (from -> to: shared memory, peer access, link, copy bandwidth of 64 MiB)\n");
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < devices.size(); ++j) {
      hal::DeviceLink link = hal::DescribeLink(*devices[i], *devices[j]);
      HEXIR_ASSIGN_OR_RETURN(double gbps,
                             hal::MeasureCopyBandwidth(*devices[i], *devices[j], 64ull << 20));
      std::printf("  %zu -> %zu: shared memory %s, peer access %s, %s, %.1f GB/s\n", i, j,
                  link.shared_memory ? "yes" : "no", link.peer_access ? "yes" : "no",
                  std::string(hal::LinkKindName(link.link)).c_str(), gbps);
    }
  }
  return Status::Ok();
}

Status Run(const Flags& flags) {
  if (flags.list_devices) return ListDevices(flags);
  if (flags.module_path.empty()) return InvalidArgument("--module is required (or --list-devices)");
  std::vector<HostValue> inputs;
  for (size_t i = 0; i < flags.inputs.size(); ++i) {
    auto v = ParseValue(flags.inputs[i]);
    if (!v.ok()) return std::move(v).status().WithContext(StrCat("--input #", i));
    inputs.push_back(std::move(*v));
  }
  InvocationOptions options;
  options.device_uris = flags.devices.empty() ? std::vector<std::string>{"cpu"} : flags.devices;
  options.cpu_threads = flags.cpu_threads;
  HEXIR_ASSIGN_OR_RETURN(auto session, Session::Open(flags.module_path, options));
  HEXIR_ASSIGN_OR_RETURN(vm::Function fn, session->LookupFunction(flags.function));
  // Parameters: mapped once, uploaded once, passed after the inputs on every call.
  std::vector<vm::Ref<hal::BufferView>> parameters;
  if (!flags.parameters.empty()) {
    HEXIR_ASSIGN_OR_RETURN(auto file, ParameterFile::Open(flags.parameters));
    HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> args, ParseAbiTypes(std::string(fn.attr("abi.args"))));
    HEXIR_RETURN_IF_ERROR(file->CheckArguments(args, StrCat("function '", fn.name, "'")));
    HEXIR_ASSIGN_OR_RETURN(parameters, file->Upload(session->device(), args));
  }
  std::vector<HostValue> results;
  for (int r = 0; r < flags.repeat; ++r) {
    vm::InvokeOptions call;
    if (flags.timeout_seconds > 0) call.deadline_ns = Interrupt::DeadlineAfter(flags.timeout_seconds);
    HEXIR_RETURN_IF_ERROR(session->Call(fn, inputs, parameters, &results, call));
  }
  if (!flags.outputs.empty() && flags.outputs.size() != results.size()) {
    return InvalidArgument("--output given ", flags.outputs.size(), " times but function '",
                           flags.function, "' returns ", results.size(), " results");
  }
  for (size_t i = 0; i < results.size(); ++i) {
    std::string target = flags.outputs.empty() ? "-" : flags.outputs[i];
    if (target == "-") {
      std::printf("%s\n", FormatValue(results[i]).c_str());
      continue;
    }
    if (target.empty() || target[0] != '@') {
      return InvalidArgument("--output '", target, "': expected @file.npy or -");
    }
    if (results[i].kind != HostValue::Kind::kTensor) {
      return InvalidArgument("--output '", target, "': result ", i, " is a scalar; use - to print it");
    }
    HEXIR_RETURN_IF_ERROR(WriteNpy(target.substr(1), results[i].tensor));
  }
  return Status::Ok();
}

}  // namespace
}  // namespace hexir::tools

int main(int argc, char** argv) {
  hexir::tools::Flags flags;
  CLI::App app{"hexir-run: call a function of a compiled Hexir module (.vmfb)"};
  app.add_option("--module", flags.module_path, "Compiled module (.vmfb)");
  app.add_option("--device", flags.devices,
                 "Device URI, once per module device in order: cpu, cpu:threads=N, cuda, cuda:N "
                 "(default: cpu)");
  app.add_flag("--list-devices", flags.list_devices,
               "Print the devices (those given with --device, else every one available) and, "
               "for each pair, shared memory, peer access, link kind and copy bandwidth");
  app.add_option("--function", flags.function, "Exported function to call")->capture_default_str();
  app.add_option("--input", flags.inputs,
                 "An argument, in order: 2x3xf32=1 2 3 4 5 6 (one value fills), f32=0.5, i64=5, @file.npy");
  app.add_option("--parameters", flags.parameters,
                 "Parameter file of hexir-import --parameters (GGUF): mapped, uploaded once and "
                 "passed as the function's last arguments, after the --input values");
  app.add_option("--output", flags.outputs,
                 "Where result i goes, one per result: @file.npy, or - to print");
  app.add_option("--cpu-threads", flags.cpu_threads,
                 "Worker threads of the CPU driver (default: all hardware threads; 0 = inline)");
  app.add_option("--repeat", flags.repeat, "Call the function this many times (results of the last)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", flags.timeout_seconds,
                 "Seconds each call (with its result downloads) may take; past it the call "
                 "stops with deadline_exceeded (default: no limit)")
      ->check(CLI::Range(1e-3, 1e9));
  if (int exit = hexir::tools::ParseFlags("hexir-run", app, argc, argv); exit >= 0) return exit;
  return hexir::tools::RunTool("hexir-run", [&] { return hexir::tools::Run(flags); });
}
