// Test-only access to test_kernels.so (built from ../test_kernels.c) as executable bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vm/native_module.h"

namespace hexir::hal::cpu::testing {

// The bytes of hal/drivers/cpu/test_kernels.so from the test's runfiles (empty if missing).
const std::vector<uint8_t>& TestKernelBytes();

// A view of TestKernelBytes() in format "cpu-elf-x86_64" with the given entry points.
vm::ExecutableView TestKernelView(std::vector<std::string_view> entry_points);

}  // namespace hexir::hal::cpu::testing
