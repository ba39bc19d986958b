#include "hal/drivers/cuda/cuda_executable.h"

#include <charconv>
#include <cstring>

namespace hexir::hal::cuda {
namespace {

StatusOr<std::array<uint32_t, 3>> ParseBlockSize(std::string_view entry, std::string_view text) {
  std::array<uint32_t, 3> v = {1, 1, 1};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, v[i]);
    bool last = i == 2;
    if (ec != std::errc() || v[i] == 0 || (last ? next != end : (next == end || *next != ','))) {
      return InvalidArgument("cuda driver: attr '", kBlockSizeAttrPrefix, entry, "' = '", text,
                             "' is not three positive integers \"X,Y,Z\"");
    }
    p = next + 1;
  }
  return v;
}

StatusOr<uint32_t> ParseSharedBytes(std::string_view entry, std::string_view text) {
  uint32_t bytes = 0;
  auto [next, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || next != text.data() + text.size()) {
    return InvalidArgument("cuda driver: attr '", kSharedBytesAttrPrefix, entry, "' = '", text,
                           "' is not a byte count");
  }
  return bytes;
}

// Loads `image` (a cubin or NUL-terminated PTX); counts every attempt as a module load.
CUresult LoadModule(CudaShared& shared, const void* image, CUmodule* module) {
  CudaCounters& c = shared.counters;
  c.module_loads.fetch_add(1, std::memory_order_relaxed);
  return shared.api->cuModuleLoadData(module, image);
}

}  // namespace

CudaExecutable::CudaExecutable(std::string format, std::vector<std::string> names,
                               std::shared_ptr<CudaShared> shared, CUmodule module,
                               std::vector<CudaEntry> entries, bool from_ptx,
                               std::vector<uint64_t> written)
    : Executable(kCudaDriverName, std::move(format), std::move(names), std::move(written)),
      shared_(std::move(shared)),
      module_(module),
      entries_(std::move(entries)),
      from_ptx_(from_ptx) {}

CudaExecutable::~CudaExecutable() {
  if (shared_->MakeCurrent().ok()) shared_->api->cuModuleUnload(module_);
}

StatusOr<vm::Ref<Executable>> CudaExecutable::Load(std::shared_ptr<CudaShared> shared,
                                                   const vm::ExecutableView& view) {
  const CudaApi& api = *shared->api;
  const std::string_view prefix = kCubinFormatPrefix;
  bool is_cubin = view.format.size() > prefix.size() && view.format.substr(0, prefix.size()) == prefix;
  if (!is_cubin && view.format != kPtxFormat) {
    return InvalidArgument("cuda driver: executable format '", view.format,
                           "' is not supported (expected '", kCubinFormat,
                           "' (any cuda-cubin-sm_<N>) or '", kPtxFormat, "')");
  }
  if (view.data == nullptr || view.size == 0) {
    return InvalidArgument("cuda driver: executable (format '", view.format, "') has no data");
  }
  std::string_view ptx_attr;
  std::vector<std::pair<std::string_view, std::string_view>> block_attrs, shared_attrs;
  std::vector<std::string_view> waiting_entries;  // "cuda.programmatic_wait.<entry>" = "1"
  for (const auto& [key, value] : view.attrs) {
    if (key == kPtxAttr) ptx_attr = value;
    if (key.substr(0, std::strlen(kBlockSizeAttrPrefix)) == kBlockSizeAttrPrefix) {
      block_attrs.emplace_back(key.substr(std::strlen(kBlockSizeAttrPrefix)), value);
    }
    if (key.substr(0, std::strlen(kSharedBytesAttrPrefix)) == kSharedBytesAttrPrefix) {
      shared_attrs.emplace_back(key.substr(std::strlen(kSharedBytesAttrPrefix)), value);
    }
    if (key.substr(0, std::strlen(kProgrammaticWaitAttrPrefix)) == kProgrammaticWaitAttrPrefix &&
        value == "1") {
      waiting_entries.push_back(key.substr(std::strlen(kProgrammaticWaitAttrPrefix)));
    }
  }
  HEXIR_RETURN_IF_ERROR(shared->MakeCurrent());

  CUmodule module = nullptr;
  bool from_ptx = false;
  std::string cubin_error;
  if (is_cubin) {
    if (view.size < 4 || std::memcmp(view.data, "\x7f" "ELF", 4) != 0) {
      cubin_error = StrCat("the ", view.size, "-byte data is not a cubin (no ELF header)");
    } else {
      CUresult r = LoadModule(*shared, view.data, &module);
      if (r != CUDA_SUCCESS) {
        cubin_error = CudaStatus(api, r, StrCat("cuModuleLoadData(cubin, ", view.size, " bytes)"))
                          .message();
        if (r == CUDA_ERROR_OUT_OF_MEMORY) return ResourceExhausted("cuda driver: ", cubin_error);
      }
    }
  }
  if (module == nullptr) {
    std::string_view ptx = is_cubin ? ptx_attr
                                    : std::string_view(reinterpret_cast<const char*>(view.data),
                                                       view.size);
    if (ptx.empty()) {
      return InvalidArgument("cuda driver: ", cubin_error, " and the executable carries no '",
                             kPtxAttr, "' attr to fall back to");
    }
    std::string text(ptx);  // cuModuleLoadData needs the PTX NUL-terminated
    CUresult r = LoadModule(*shared, text.c_str(), &module);
    if (r != CUDA_SUCCESS) {
      std::string ptx_error =
          CudaStatus(api, r, StrCat("cuModuleLoadData(ptx, ", text.size(), " bytes)")).message();
      if (r == CUDA_ERROR_OUT_OF_MEMORY) return ResourceExhausted("cuda driver: ", ptx_error);
      return InvalidArgument("cuda driver: ", cubin_error.empty() ? "" : cubin_error + "; then ",
                             ptx_error);
    }
    from_ptx = true;
  }

  std::vector<std::string> names;
  std::vector<CudaEntry> entries;
  Status error;
  for (size_t i = 0; i < view.entry_points.size() && error.ok(); ++i) {
    std::string name(view.entry_points[i]);
    CudaEntry e;
    CUresult r = api.cuModuleGetFunction(&e.function, module, name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) {
      error = NotFound("cuda driver: entry point '", name, "' (ordinal ", i,
                       ") is not a kernel of the executable");
      break;
    }
    if (r != CUDA_SUCCESS) {
      error = CudaStatus(api, r, StrCat("cuModuleGetFunction('", name, "')"));
      break;
    }
    for (const auto& [entry, value] : block_attrs) {
      if (entry != name) continue;
      auto bs = ParseBlockSize(entry, value);
      if (!bs.ok()) {
        error = bs.status();
        break;
      }
      e.block_size = *bs;
    }
    if (!error.ok()) break;
    for (const auto& [entry, value] : shared_attrs) {
      if (entry != name) continue;
      auto bytes = ParseSharedBytes(entry, value);
      if (!bytes.ok()) {
        error = bytes.status();
        break;
      }
      e.shared_bytes = *bytes;
    }
    if (!error.ok()) break;
    for (std::string_view entry : waiting_entries) e.programmatic_wait |= entry == name;
    // Above 48 KiB a kernel gets dynamic shared memory only once its limit is raised.
    if (e.shared_bytes > 0) {
      r = api.cuFuncSetAttribute(e.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(e.shared_bytes));
      if (r != CUDA_SUCCESS) {
        error = CudaStatus(api, r, StrCat("cuFuncSetAttribute('", name, "', ", e.shared_bytes,
                                          " bytes of dynamic shared memory)"));
        break;
      }
    }
    int max_threads = 0;
    r = api.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, e.function);
    if (r != CUDA_SUCCESS) {
      error = CudaStatus(api, r, StrCat("cuFuncGetAttribute('", name, "')"));
      break;
    }
    uint64_t threads = uint64_t{e.block_size[0]} * e.block_size[1] * e.block_size[2];
    if (threads > static_cast<uint64_t>(max_threads) || e.block_size[2] > 64) {
      error = InvalidArgument("cuda driver: entry '", name, "': block size ", e.block_size[0], ",",
                              e.block_size[1], ",", e.block_size[2], " (", threads,
                              " threads) exceeds the kernel's limit of ", max_threads, " threads");
      break;
    }
    if (api.cuFuncGetParamInfo != nullptr) {
      int32_t n = 0;
      size_t offset = 0, size = 0;
      while (n < 4096 && api.cuFuncGetParamInfo(e.function, n, &offset, &size) == CUDA_SUCCESS) {
        e.param_sizes.push_back(static_cast<uint32_t>(size));
        ++n;
      }
      e.param_count = n;
    }
    e.writes_stated = !view.entry_written_bindings.empty();
    names.push_back(std::move(name));
    entries.push_back(e);
  }
  if (!error.ok()) {
    api.cuModuleUnload(module);
    return error;
  }
  return vm::Ref<Executable>::Adopt(new CudaExecutable(std::string(view.format), std::move(names),
                                                       std::move(shared), module,
                                                       std::move(entries), from_ptx,
                                                       view.entry_written_bindings));
}

}  // namespace hexir::hal::cuda
