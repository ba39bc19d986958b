// The helpers of bench/vm_loop/run.sh:
//   loop_modules hand-written OUT.vmfb   writes `main(n) = sum over i < n of (i*7)%13` as
//                                        hand-written bytecode (mul, rem, add, for.i64 per
//                                        iteration: the form the compiled loop should reach)
//   loop_modules count MODULE.vmfb...    prints for each module the VM instructions its
//                                        `main` executes per iteration:
//                                        (main(1001) - main(1)) / 1000, on the CPU inline
// Errors (a module that does not load, a failing call) name the module; exit 1.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tools/common/invocation.h"
#include "tools/common/tensor_io.h"
#include "vm/testing/builder.h"

namespace hexir {
namespace {

Status WriteHandWritten(const std::string& path) {
  vm::testing::ModuleBuilder mb("vm_loop_hand_written");
  auto& f = mb.AddFunction("main", "i_i");
  vm::testing::Label body = f.NewLabel(), exit = f.NewLabel();
  f.Op(vm::Op::ConstI64).V(1).K(0);                 // s
  f.Op(vm::Op::ConstI64).V(2).K(0);                 // i
  f.Op(vm::Op::ConstI64).V(3).K(1);                 // step
  f.Op(vm::Op::ConstI64).V(4).K(7);
  f.Op(vm::Op::ConstI64).V(5).K(13);
  f.Op(vm::Op::BrLeSI64).V(0).V(2).T(exit).P({});   // n <= i: no iteration
  f.Bind(body);
  f.Op(vm::Op::MulI64).V(6).V(2).V(4);
  f.Op(vm::Op::RemSI64).V(6).V(6).V(5);
  f.Op(vm::Op::AddI64).V(1).V(1).V(6);
  f.Op(vm::Op::ForI64).V(2).V(3).V(0).T(body).P({});  // i += 1; i < n: again
  f.Bind(exit);
  f.Op(vm::Op::Return).L({vm::testing::V(1)});
  f.AddAttr("abi.args", "i64");
  f.AddAttr("abi.results", "i64");
  mb.AddExport("main", f.ordinal());
  HEXIR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, mb.Build());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return InvalidArgument("cannot write '", path, "'");
  return Status::Ok();
}

// Instructions `main` of `path` executes per iteration.
StatusOr<double> InstructionsPerIteration(const std::string& path) {
  tools::InvocationOptions options;
  options.device_uri = "cpu";
  options.cpu_threads = 0;
  HEXIR_ASSIGN_OR_RETURN(auto session, tools::Session::Open(path, options));
  HEXIR_ASSIGN_OR_RETURN(vm::Function main, session->LookupFunction("main"));
  uint64_t counts[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    HEXIR_ASSIGN_OR_RETURN(tools::HostValue n, tools::ParseValue(k == 0 ? "i64=1" : "i64=1001"));
    uint64_t before = session->context().stats().instructions;
    std::vector<tools::HostValue> results;
    HEXIR_RETURN_IF_ERROR(session->Call(main, {n}, &results));
    counts[k] = session->context().stats().instructions - before;
  }
  return static_cast<double>(counts[1] - counts[0]) / 1000.0;
}

int Main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "hand-written" && argc == 3) {
    Status status = WriteHandWritten(argv[2]);
    if (status.ok()) return 0;
    std::fprintf(stderr, "loop_modules: error: %s\n", status.ToString().c_str());
    return 1;
  }
  if (mode == "count" && argc > 2) {
    for (int i = 2; i < argc; ++i) {
      StatusOr<double> per = InstructionsPerIteration(argv[i]);
      if (!per.ok()) {
        std::fprintf(stderr, "loop_modules: error: %s: %s\n", argv[i], per.status().ToString().c_str());
        return 1;
      }
      std::printf("%s %.2f\n", argv[i], *per);
    }
    return 0;
  }
  std::fprintf(stderr, "usage: loop_modules hand-written OUT.vmfb | loop_modules count MODULE.vmfb...\n");
  return 1;
}

}  // namespace
}  // namespace hexir

int main(int argc, char** argv) { return hexir::Main(argc, argv); }
