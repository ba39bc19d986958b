// hexir-run: loads a .vmfb module, calls one function with inputs given on the command
// line, and prints (or saves) its results. See README.md for the flags.
#include <CLI/CLI.hpp>
#include <algorithm>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "base/status.h"
#include "hal/api.h"
#include "hal/topology.h"
#include "tools/common/tensor_io.h"
#include "tools/common/device_trace.h"
#include "tools/common/invocation.h"
#include "tools/common/parameter_file.h"
#include "tools/common/rank_sessions.h"
#include "tools/common/flag_checks.h"
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
  std::string trace;           // --trace: Chrome/Perfetto JSON of every device's work
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

// The --input values, with "{rank}" in a spec replaced by `rank` (rank < 0: as written).
StatusOr<std::vector<HostValue>> ParseInputs(const Flags& flags, int32_t rank) {
  std::vector<HostValue> inputs;
  for (size_t i = 0; i < flags.inputs.size(); ++i) {
    auto v = ParseValue(rank < 0 ? flags.inputs[i] : ForRank(flags.inputs[i], rank));
    if (!v.ok()) return std::move(v).status().WithContext(StrCat("--input #", i));
    inputs.push_back(std::move(*v));
  }
  return inputs;
}

bool NamesRank(const std::string& spec) { return spec.find("{rank}") != std::string::npos; }

// Result i to --output i (@file.npy, "{rank}" replaced by `rank` >= 0, or - to print; every result
// printed without --output). `per_rank_only`: only the outputs whose file name holds "{rank}".
Status EmitResults(const Flags& flags, const std::vector<HostValue>& results, int32_t rank, bool per_rank_only) {
  if (!flags.outputs.empty() && flags.outputs.size() != results.size()) {
    return InvalidArgument("--output given ", flags.outputs.size(), " times but function '",
                           flags.function, "' returns ", results.size(), " results");
  }
  for (size_t i = 0; i < results.size(); ++i) {
    std::string target = flags.outputs.empty() ? "-" : rank < 0 ? flags.outputs[i] : ForRank(flags.outputs[i], rank);
    if (per_rank_only && (flags.outputs.empty() || !NamesRank(flags.outputs[i]))) continue;
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

// The calls of a run: --repeat times, each under its own --timeout deadline, traced over
// `devices` when --trace asks (TraceCalls).
template <typename Call>
Status RepeatCalls(const Flags& flags, const std::vector<hal::Device*>& devices,
                   const std::vector<std::string>& names, Call&& call) {
  return TraceCalls("hexir-run", flags.trace, devices, names, [&]() -> Status {
    for (int r = 0; r < flags.repeat; ++r) {
      vm::InvokeOptions options;
      if (flags.timeout_seconds > 0) options.deadline_ns = Interrupt::DeadlineAfter(flags.timeout_seconds);
      HEXIR_RETURN_IF_ERROR(call(options));
    }
    return Status::Ok();
  });
}

Status Run(const Flags& flags) {
  if (flags.list_devices) return ListDevices(flags);
  if (flags.module_path.empty()) return InvalidArgument("--module is required (or --list-devices)");
  InvocationOptions options;
  options.device_uris = flags.devices.empty() ? std::vector<std::string>{"cpu"} : flags.devices;
  options.cpu_threads = flags.cpu_threads;
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<vm::Module> module, vm::Module::LoadFromFile(flags.module_path));
  if (RunsAsRanks(*module, options.device_uris.size())) {
    if (!flags.parameters.empty()) {
      return InvalidArgument("--parameters with one rank per device is not supported yet (module '",
                             flags.module_path, "' runs as ", options.device_uris.size(), " ranks)");
    }
    // One rank per device, each called with the inputs ("{rank}" in a spec: its own file);
    // rank 0's results print, every rank's go to outputs naming "{rank}".
    std::vector<std::vector<HostValue>> inputs;
    const bool per_rank_inputs = std::any_of(flags.inputs.begin(), flags.inputs.end(), NamesRank);
    for (int32_t r = 0; r < (per_rank_inputs ? int32_t(options.device_uris.size()) : 1); ++r) {
      StatusOr<std::vector<HostValue>> mine = ParseInputs(flags, per_rank_inputs ? r : -1);
      if (!mine.ok()) return std::move(mine).status().WithContext(StrCat("rank ", r));
      inputs.push_back(std::move(*mine));
    }
    HEXIR_ASSIGN_OR_RETURN(auto ranks, RankSessions::Open(*module, flags.module_path, options));
    std::vector<hal::Device*> devices;
    std::vector<std::string> names;
    for (int32_t r = 0; r < ranks->size(); ++r) {
      devices.push_back(&ranks->group().device(r));
      names.push_back(StrCat("rank ", r, " (", options.device_uris[r], ")"));
    }
    std::vector<std::vector<HostValue>> per_rank;
    HEXIR_RETURN_IF_ERROR(RepeatCalls(flags, devices, names, [&](const vm::InvokeOptions& call) {
      return ranks->CallOnEveryRank(flags.function, inputs, &per_rank, call);
    }));
    for (int32_t r = 1; r < ranks->size(); ++r) HEXIR_RETURN_IF_ERROR(EmitResults(flags, per_rank[r], r, true));
    return EmitResults(flags, per_rank[0], 0, false);
  }
  HEXIR_ASSIGN_OR_RETURN(std::vector<HostValue> inputs, ParseInputs(flags, -1));
  std::vector<HostValue> results;
  HEXIR_ASSIGN_OR_RETURN(auto session, Session::Open(std::move(module), flags.module_path, options));
  HEXIR_ASSIGN_OR_RETURN(vm::Function fn, session->LookupFunction(flags.function));
  // Parameters: mapped once, uploaded once, passed after the inputs on every call.
  std::vector<vm::Ref<hal::BufferView>> parameters;
  if (!flags.parameters.empty()) {
    HEXIR_ASSIGN_OR_RETURN(auto file, ParameterFile::Open(flags.parameters));
    HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> args, file->CheckFunction(fn));
    HEXIR_ASSIGN_OR_RETURN(std::vector<size_t> on, ArgumentDevices(fn, session->device_count()));
    std::vector<hal::Device*> argument_devices;
    for (size_t ordinal : on) argument_devices.push_back(&session->device(ordinal));
    HEXIR_ASSIGN_OR_RETURN(parameters, file->Upload(argument_devices, args));
  }
  std::vector<hal::Device*> devices;
  std::vector<std::string> names;
  for (size_t i = 0; i < session->device_count(); ++i) {
    devices.push_back(&session->device(i));
    names.push_back(StrCat("device ", i, " (", session->device(i).uri(), ")"));
  }
  HEXIR_RETURN_IF_ERROR(RepeatCalls(flags, devices, names, [&](const vm::InvokeOptions& call) {
    return session->Call(fn, inputs, parameters, &results, call);
  }));
  return EmitResults(flags, results, -1, false);
}

}  // namespace
}  // namespace hexir::tools

int main(int argc, char** argv) {
  hexir::tools::Flags flags;
  CLI::App app{"hexir-run: call a function of a compiled Hexir module (.vmfb)"};
  app.add_option("--module", flags.module_path, "Compiled module (.vmfb)");
  app.add_option("--device", flags.devices,
                 "Device URI, once per module device in order: cpu, cpu:threads=N, cuda, cuda:N "
                 "(default: cpu); for a module of one device that uses collectives, one rank "
                 "per device");
  app.add_flag("--list-devices", flags.list_devices,
               "Print the devices (those given with --device, else every one available) and, "
               "for each pair, shared memory, peer access, link kind and copy bandwidth");
  app.add_option("--function", flags.function, "Exported function to call")->capture_default_str();
  app.add_option("--input", flags.inputs,
                 "An argument, in order: 2x3xf32=1 2 3 4 5 6 (one value fills), f32=0.5, i64=5, @file.npy "
                 "(one rank per device: {rank} in it is the rank, each rank's own file)");
  app.add_option("--parameters", flags.parameters,
                 "Parameter file of hexir-import --parameters (GGUF): mapped, uploaded once and "
                 "passed as the function's last arguments, after the --input values");
  app.add_option("--output", flags.outputs,
                 "Where result i goes, one per result: @file.npy, or - to print (one rank per device: "
                 "rank 0's, or every rank's to the files that {rank} in the name gives)");
  app.add_option("--cpu-threads", flags.cpu_threads,
                 "Worker threads of the CPU driver (default: all hardware threads; 0 = inline)")
      ->check(hexir::tools::CpuThreads(hexir::hal::kMaxCpuWorkers));
  app.add_option("--repeat", flags.repeat, "Call the function this many times (results of the last)")
      ->check(hexir::tools::AtLeastOne());
  app.add_option("--timeout", flags.timeout_seconds,
                 "Seconds each call (with its result downloads) may take; past it the call "
                 "stops with deadline_exceeded (default: no limit)")
      ->check(hexir::tools::FiniteRange(1e-3, 1e9));
  app.add_option("--trace", flags.trace,
                 "Write every device's dispatches and collectives of the calls as a Chrome/Perfetto "
                 "trace (JSON; one process per device or rank)");
  if (int exit = hexir::tools::ParseFlags("hexir-run", app, argc, argv); exit >= 0) return exit;
  return hexir::tools::RunTool("hexir-run", [&] { return hexir::tools::Run(flags); });
}
