// hexir-run: loads a .vmfb module, calls one function with inputs given on the command
// line, and prints (or saves) its results. See README.md for the flags.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "base/status.h"
#include "tools/common/tensor_io.h"
#include "tools/common/invocation.h"
#include "tools/common/tool_main.h"

namespace hexir::tools {
namespace {

struct Flags {
  std::string module_path;
  std::string device = "cpu";
  std::string function = "main";
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  int cpu_threads = -1;
  int repeat = 1;
  double timeout_seconds = 0;  // 0: none
};

Status Run(const Flags& flags) {
  std::vector<HostValue> inputs;
  for (size_t i = 0; i < flags.inputs.size(); ++i) {
    auto v = ParseValue(flags.inputs[i]);
    if (!v.ok()) return std::move(v).status().WithContext(StrCat("--input #", i));
    inputs.push_back(std::move(*v));
  }
  InvocationOptions options;
  options.device_uri = flags.device;
  options.cpu_threads = flags.cpu_threads;
  HEXIR_ASSIGN_OR_RETURN(auto session, Session::Open(flags.module_path, options));
  HEXIR_ASSIGN_OR_RETURN(vm::Function fn, session->LookupFunction(flags.function));
  std::vector<HostValue> results;
  for (int r = 0; r < flags.repeat; ++r) {
    vm::InvokeOptions call;
    if (flags.timeout_seconds > 0) call.deadline_ns = Interrupt::DeadlineAfter(flags.timeout_seconds);
    HEXIR_RETURN_IF_ERROR(session->Call(fn, inputs, &results, call));
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
  app.add_option("--module", flags.module_path, "Compiled module (.vmfb)")->required();
  app.add_option("--device", flags.device, "Device URI: cpu, cuda, cuda:N")->capture_default_str();
  app.add_option("--function", flags.function, "Exported function to call")->capture_default_str();
  app.add_option("--input", flags.inputs,
                 "An argument, in order: 2x3xf32=1 2 3 4 5 6 (one value fills), f32=0.5, i64=5, @file.npy");
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
