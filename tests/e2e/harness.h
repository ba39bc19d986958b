// Helpers for end-to-end tests: run the real tools as a user would and compare their
// results with plain C++ reference loops.
#pragma once

#include <string>
#include <vector>

#include "tools/common/tensor_io.h"

namespace hexir::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing its output.
CommandResult RunCommand(const std::string& command);

// Path of a fresh file in the test's temporary directory.
std::string TempFile(const std::string& name);
void WriteFile(const std::string& path, const std::string& text);

// hexir-compile SOURCE --target=cpu -o OUT; returns the module path (REQUIREs success).
std::string CompileOrDie(const std::string& mlir_source, const std::string& name,
                         const std::string& target = "cpu");

// hexir-run with the given inputs (saved as .npy) and returns the results read back from
// .npy files (REQUIREs success).
std::vector<tools::HostTensor> RunOrDie(const std::string& module, const std::string& function,
                                        const std::vector<tools::HostTensor>& inputs,
                                        int result_count, const std::string& device = "cpu",
                                        const std::string& extra_flags = "");

// True when a CUDA device can be used here (libcuda.so.1 loads and reports a device).
bool CudaAvailable();
// For a test that needs a GPU: returns true when one is present; otherwise prints
// "HEXIR_SKIPPED: <what>: <reason>" (counted as skipped by tools/test.sh) and returns false.
bool CudaOrSkip(const std::string& what);

// Defines one test case per device: "NAME [cpu]" runs BODY("cpu"); "NAME [cuda]" compiles for
// --target=cuda and runs on the GPU, or reports itself skipped where there is none.
#define HEXIR_E2E_TEST_ON_DEVICES(NAME, BODY)                              \
  TEST_CASE(NAME " [cpu]") { BODY("cpu"); }                                \
  TEST_CASE(NAME " [cuda]") {                                              \
    if (::hexir::e2e::CudaOrSkip(NAME " [cuda]")) BODY("cuda");            \
  }

std::string HexirRun();      // path to the hexir-run binary
std::string HexirCompile();  // path to the hexir-compile binary

tools::HostTensor RandomF32(std::vector<int64_t> dims, unsigned seed, float lo = -1, float hi = 1);
tools::HostTensor ZerosF32(std::vector<int64_t> dims);
float* F32(tools::HostTensor& t);
const float* F32(const tools::HostTensor& t);

// REQUIREs equal shapes and |a - b| <= atol + rtol * |b| elementwise, reporting the first miss.
void RequireClose(const tools::HostTensor& actual, const tools::HostTensor& expected,
                  double rtol = 1e-5, double atol = 1e-5);

}  // namespace hexir::e2e
