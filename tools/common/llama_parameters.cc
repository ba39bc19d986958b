#include "tools/common/llama_parameters.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "compiler/importers/llama/Gguf.h"
#include "compiler/importers/llama/GgufLlama.h"
#include "hal/element_type.h"
#include "tools/common/tensor_io.h"

namespace hexir::tools {

namespace llama = compiler::llama;

StatusOr<std::unique_ptr<LlamaParameters>> LlamaParameters::Open(const std::string& path) {
  std::unique_ptr<LlamaParameters> p(new LlamaParameters());
  p->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound("cannot open parameters '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return InvalidArgument("parameters '", path, "' is empty or unreadable");
  }
  p->size_ = static_cast<size_t>(st.st_size);
  void* data = mmap(nullptr, p->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) return Internal("cannot mmap '", path, "': ", std::strerror(errno));
  p->data_ = static_cast<uint8_t*>(data);
  if (llama::IsGguf(p->data_, p->size_)) {
    StatusOr<llama::GgufLlama> model = llama::ParseGgufLlama(p->data_, p->size_);
    if (!model.ok()) return std::move(model).status().WithContext(StrCat("'", path, "'"));
    p->config_ = model->config;
    p->weights_ = std::move(model->weights);
  } else {
    StatusOr<llama::LlamaConfig> config = llama::ParseLlamaHeader(p->data_, p->size_);
    if (!config.ok()) return std::move(config).status().WithContext(StrCat("'", path, "'"));
    p->config_ = *config;
    p->weights_ = llama::LlamaWeights(*config);
  }
  return p;
}

LlamaParameters::~LlamaParameters() {
  if (data_) munmap(data_, size_);
}

StatusOr<int32_t> LlamaParameters::CheckArguments(const std::vector<AbiType>& args, size_t first,
                                                  const std::string& function) const {
  if (args.size() != first + weights_.size())
    return InvalidArgument(function, " takes ", args.size(),
                           " arguments but checkpoint '", path_, "' has ", weights_.size(),
                           " weight tensors (expected ", first + weights_.size(),
                           "); import the module from this checkpoint");
  // Weights are f32 (llama2.c) or f32/f16 (GGUF) in the file; a module imported with
  // --weights=f16 takes f16, otherwise f32.
  const int32_t kF32 = static_cast<int32_t>(hal::ElementType::kF32);
  const int32_t kF16 = static_cast<int32_t>(hal::ElementType::kF16);
  const int32_t weight_type = args.size() > first ? args[first].element_type : kF32;
  for (size_t i = 0; i < weights_.size(); ++i) {
    const AbiType& a = args[first + i];
    const llama::WeightTensor& w = weights_[i];
    const bool bad_type = a.element_type != weight_type || (weight_type != kF32 && weight_type != kF16);
    if (a.dims != w.dims || bad_type)
      return InvalidArgument(function, ": argument ", first + i, " is ", a.text,
                             " but checkpoint tensor '", w.name, "' (offset ", w.offset, ") is ",
                             hal::FormatShape(Span<const int64_t>(w.dims.data(), w.dims.size()),
                                              w.type == llama::StoredType::kF16 ? kF16 : kF32),
                             bad_type ? " (the module must take f32 or f16 weights, all of one type)" : "");
  }
  return weight_type;
}

StatusOr<std::vector<vm::Ref<hal::BufferView>>> LlamaParameters::Upload(hal::Device& device,
                                                                        int32_t element_type) const {
  const int32_t kF16 = static_cast<int32_t>(hal::ElementType::kF16);
  std::vector<vm::Ref<hal::BufferView>> views;
  std::vector<uint16_t> half;
  std::vector<float> single;
  for (const llama::WeightTensor& w : weights_) {
    const uint8_t* stored = data_ + w.offset;
    const void* data = stored;
    size_t bytes = size_t(w.byte_size());
    const bool stored_f16 = w.type == llama::StoredType::kF16;
    if (element_type == kF16 && !stored_f16) {
      half.resize(bytes / 4);
      for (size_t i = 0; i < half.size(); ++i) {
        float v;
        std::memcpy(&v, stored + 4 * i, 4);
        half[i] = FloatToHalf(v);
      }
      data = half.data();
      bytes = half.size() * 2;
    } else if (element_type != kF16 && stored_f16) {
      single.resize(bytes / 2);
      for (size_t i = 0; i < single.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, stored + 2 * i, 2);
        single[i] = HalfToFloat(h);
      }
      data = single.data();
      bytes = single.size() * 4;
    }
    HEXIR_ASSIGN_OR_RETURN(
        auto view, hal::BufferViewFromHost(device, element_type,
                                           Span<const int64_t>(w.dims.data(), w.dims.size()), data, bytes));
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace hexir::tools
