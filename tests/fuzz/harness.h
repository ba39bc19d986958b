// One fuzzing step, shared by the libFuzzer target and the seed tests: load + verify the bytes
// as a module, disassemble every function, link it with the fake HAL, then invoke each export
// (at most kMaxExports) with fixed arguments under a fuel limit. Never crashes on any input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hexir::fuzz {

inline constexpr uint64_t kFuel = 4096;      // instructions per invocation
inline constexpr size_t kMaxExports = 8;

struct RunResult {
  bool loaded = false;     // parsed and verified
  bool linked = false;     // imports resolved, initializer ran
  int invocations = 0;
  int succeeded = 0;       // invocations that returned ok
  std::string first_error; // of loading, linking or the first failed invocation
};

RunResult RunModuleBytes(const uint8_t* data, size_t size);

}  // namespace hexir::fuzz
