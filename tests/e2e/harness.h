// Helpers for end-to-end tests: run the real tools as a user would and compare their
// results with plain C++ reference loops.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tools/common/invocation.h"
#include "tools/common/tensor_io.h"

namespace hexir::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing its output.
CommandResult RunCommand(const std::string& command);

// The CUDA module at `module` has `expected_kernels` kernels, each running more than one thread
// a block (hexir-dump's `cuda.block_size.<entry>` attributes: fused kernels got a real
// distribution).
void RequireNoOneThreadKernel(const std::string& module, size_t expected_kernels);

// Path of a fresh file in the test's temporary directory.
std::string TempFile(const std::string& name);
void WriteFile(const std::string& path, const std::string& text);

// hexir-compile SOURCE --target=cpu -o OUT [extra_flags]; returns the module path (REQUIREs
// success). A call repeating an earlier one of the process (name, target, flags and source)
// returns the module already compiled: treat it as read-only.
std::string CompileOrDie(const std::string& mlir_source, const std::string& name,
                         const std::string& target = "cpu", const std::string& extra_flags = "");

// hexir-run with the given inputs (saved as .npy) and returns the results read back from
// .npy files (REQUIREs success).
std::vector<tools::HostTensor> RunOrDie(const std::string& module, const std::string& function,
                                        const std::vector<tools::HostTensor>& inputs,
                                        int result_count, const std::string& device = "cpu",
                                        const std::string& extra_flags = "");

// True when a CUDA device can be used here (libcuda.so.1 loads and reports a device).
bool CudaAvailable();

// Thrown by RequireDevice when the device is absent; HEXIR_E2E_TEST_ON_DEVICES turns it into
// a printed "HEXIR_SKIPPED: <case>: <reason>" line, which tools/test.sh counts as skipped.
struct DeviceUnavailable {
  std::string reason;
};
// Throws DeviceUnavailable unless `device` ("cpu", "cuda") can run here. Tests that compile
// modules call it only for what needs the device itself; their modules are compiled for CUDA
// where no GPU is too (OpenOrDie then throws), so a pass change that breaks a CUDA compile
// fails here, not first in tools/gpu/pack.sh (session 46: a device loop's did).
void RequireDevice(const std::string& device);


// Call arguments: a tensor, an i64 scalar, an f32 scalar.
tools::HostValue Tensor(tools::HostTensor t);
tools::HostValue I64Scalar(int64_t x);
tools::HostValue F32Scalar(double x);

// Opens `module` on `device` (RequireDevice first); `cpu_threads` as tools::InvocationOptions
// (-1: the default). Any other failure fails the test case with the status.
std::unique_ptr<tools::Session> OpenOrDie(const std::string& module, const std::string& device,
                                          int cpu_threads = -1);
// Calls function `name` with `inputs` and returns its results; a failure fails the test case.
std::vector<tools::HostValue> CallOrDie(tools::Session& session, const std::string& name,
                                        const std::vector<tools::HostValue>& inputs);

// Defines one test case per device: "NAME [cpu]" runs BODY("cpu"); "NAME [cuda]" runs
// BODY("cuda"), which compiles for --target=cuda everywhere (exercising code generation) and
// runs on the GPU, or reports itself skipped at its first run where there is none.
#define HEXIR_E2E_TEST_ON_DEVICES(NAME, BODY)                                    \
  TEST_CASE(NAME " [cpu]") { BODY("cpu"); }                                      \
  TEST_CASE(NAME " [cuda]") {                                                    \
    try {                                                                        \
      BODY("cuda");                                                              \
    } catch (const ::hexir::e2e::DeviceUnavailable& e) {                         \
      std::printf("HEXIR_SKIPPED: %s: %s\n", NAME " [cuda]", e.reason.c_str());  \
    }                                                                            \
  }

// Modules: CompileOrDie writes each module as <name>.<digest>.<target>.vmfb (digest: 8 hex digits
// of the flags and source, so one name given to two programs cannot collide); with HEXIR_SAVE_MODULES_DIR
// set it also copies it there, and with HEXIR_PRECOMPILED_DIR set it takes the module from
// there instead of running hexir-compile (for machines without LLVM, such as the GPU machine).
// HEXIR_COMPILE_FLAGS adds flags to every hexir-compile (e.g. --cpu=x86-64-v3 for modules that
// will run on another machine's CPU).

std::string HexirRun();      // path to the hexir-run binary
std::string HexirCompile();  // path to the hexir-compile binary

tools::HostTensor RandomF32(std::vector<int64_t> dims, unsigned seed, float lo = -1, float hi = 1);
tools::HostTensor ZerosF32(std::vector<int64_t> dims);
// Values q / 1024 (q in [-1024, 1024], uniform from `seed`), exact in f32 and in f16: the tensor
// as f32, or as f16 with `f16` (the same values), and the values as doubles for a reference.
tools::HostTensor DyadicTensor(std::vector<int64_t> dims, unsigned seed, bool f16,
                               std::vector<double>& values);
// `t` (f32) rounded to `element` ("f32", "f16" or "bf16") in place, so that a reference reads
// the rounded values, and the same values as a tensor of `element` (t itself for f32).
tools::HostTensor Narrowed(tools::HostTensor& t, const std::string& element);
float* F32(tools::HostTensor& t);
const float* F32(const tools::HostTensor& t);

// REQUIREs equal shapes and |a - b| <= atol + rtol * |b| elementwise, reporting the first miss.
void RequireClose(const tools::HostTensor& actual, const tools::HostTensor& expected,
                  double rtol = 1e-5, double atol = 1e-5);

}  // namespace hexir::e2e
