#include "hal/drivers/cpu/testing/test_kernels.h"

#include <fstream>
#include <iterator>

namespace hexir::hal::cpu::testing {

const std::vector<uint8_t>& TestKernelBytes() {
  static const std::vector<uint8_t> bytes = [] {
    // Bazel runs tests from the workspace root of their runfiles tree.
    std::ifstream f("hal/drivers/cpu/test_kernels.so", std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
  }();
  return bytes;
}

vm::ExecutableView TestKernelView(std::vector<std::string_view> entry_points) {
  vm::ExecutableView view;
  view.format = "cpu-elf-x86_64";
  view.data = TestKernelBytes().data();
  view.size = TestKernelBytes().size();
  view.entry_points = std::move(entry_points);
  return view;
}

}  // namespace hexir::hal::cpu::testing
