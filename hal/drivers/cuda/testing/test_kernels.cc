#include "hal/drivers/cuda/testing/test_kernels.h"

#include <fstream>
#include <iterator>

namespace hexir::hal::cuda::testing {
namespace {

const std::vector<uint8_t>& ReadFile(const char* path) {
  auto* bytes = new std::vector<uint8_t>();
  std::ifstream f(path, std::ios::binary);
  bytes->assign(std::istreambuf_iterator<char>(f), {});
  return *bytes;
}

const std::vector<uint8_t>& Cubin() {
  static const std::vector<uint8_t>& b = ReadFile("hal/drivers/cuda/testing/test_kernels.cubin");
  return b;
}

const std::vector<uint8_t>& Ptx() {
  static const std::vector<uint8_t>& b = ReadFile("hal/drivers/cuda/testing/test_kernels.ptx");
  return b;
}

const std::vector<uint8_t>& Sm100Cubin() {
  static const std::vector<uint8_t>& b =
      ReadFile("hal/drivers/cuda/testing/test_kernels_sm100.cubin");
  return b;
}

const std::vector<std::pair<std::string_view, std::string_view>>& BlockAttrs() {
  static const std::vector<std::pair<std::string_view, std::string_view>> attrs = {
      {"cuda.block_size.affine_i32", "32,1,1"},
      {"cuda.block_size.fail_at", "32,1,1"},
      {"cuda.block_size.rendezvous", "32,1,1"},
      {"cuda.block_size.spin_us", "32,1,1"},
  };
  return attrs;
}

}  // namespace

std::string KernelsMissingReason() {
  if (Cubin().empty() || Ptx().empty() || Sm100Cubin().empty()) {
    return "the CUDA test kernels were not built (nvcc was missing at build time, or "
           "hal/drivers/cuda/testing/test_kernels.{cubin,ptx} is not under the working "
           "directory)";
  }
  return "";
}

vm::ExecutableView CubinView(std::vector<std::string_view> entry_points, bool with_ptx) {
  vm::ExecutableView v;
  v.format = "cuda-cubin-sm_90";
  v.data = Cubin().data();
  v.size = Cubin().size();
  v.entry_points = std::move(entry_points);
  v.attrs = BlockAttrs();
  if (with_ptx) {
    v.attrs.emplace_back("cuda.ptx",
                         std::string_view(reinterpret_cast<const char*>(Ptx().data()), Ptx().size()));
  }
  return v;
}

vm::ExecutableView ForeignCubinView(std::vector<std::string_view> entry_points, bool with_ptx) {
  vm::ExecutableView v = CubinView(std::move(entry_points), with_ptx);
  v.data = Sm100Cubin().data();
  v.size = Sm100Cubin().size();
  return v;
}

vm::ExecutableView PtxView(std::vector<std::string_view> entry_points) {
  vm::ExecutableView v;
  v.format = "cuda-ptx";
  v.data = Ptx().data();
  v.size = Ptx().size();
  v.entry_points = std::move(entry_points);
  v.attrs = BlockAttrs();
  return v;
}

}  // namespace hexir::hal::cuda::testing
