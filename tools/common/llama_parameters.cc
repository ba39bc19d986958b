#include "tools/common/llama_parameters.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "compiler/importers/llama/Gguf.h"
#include "compiler/importers/llama/GgufLlama.h"
#include "compiler/importers/llama/HfLlama.h"
#include "compiler/importers/llama/TensorParallel.h"
#include "hal/element_type.h"
#include "hal/profiling.h"
#include "tools/common/bulk_convert.h"

namespace hexir::tools {

namespace llama = compiler::llama;

namespace {

// Maps `path` read-only into (*data, *size).
Status MapFile(const std::string& path, uint8_t** data, size_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound("cannot open parameters '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("parameters '", path, "' is not a regular file (a directory or a device?)");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return InvalidArgument("parameters '", path, "' is empty");
  }
  *size = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, *size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return Internal("cannot mmap '", path, "': ", std::strerror(errno));
  *data = static_cast<uint8_t*>(p);
  return Status::Ok();
}

// The argument element type of a kept tensor: i8 (block bytes) or bf16.
int32_t KeptElementType(const llama::WeightTensor& w) {
  return static_cast<int32_t>(hal::ElementTypeFromName(w.kept->ArgumentElement()));
}

// A safetensors shard mapped for the length of one Upload.
struct Shard {
  uint8_t* data = nullptr;
  size_t size = 0;
  ~Shard() {
    if (data) munmap(data, size);
  }
};

}  // namespace

// Hugging Face stores each head's q/k rows as [first elements of the rotary pairs; second
// elements] (rotate-half); the program rotates interleaved pairs (2i, 2i+1). Row h*hd + 2i + j
// of the result is row h*hd + j*hd/2 + i of the stored matrix.
void PermuteRotateHalfRows(const llama::WeightTensor& w, std::vector<float>* values) {
  const int64_t rows = w.dims[0], cols = w.dims.size() > 1 ? w.dims[1] : 1;
  const int64_t hd = rows / w.rotate_half_heads;
  std::vector<float> out(values->size());
  for (int64_t h = 0; h < w.rotate_half_heads; ++h)
    for (int64_t i = 0; i < hd / 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::memcpy(&out[size_t((h * hd + 2 * i + j) * cols)], &(*values)[size_t((h * hd + j * hd / 2 + i) * cols)],
                    size_t(cols) * sizeof(float));
  values->swap(out);
}


StatusOr<std::unique_ptr<LlamaParameters>> LlamaParameters::Open(const std::string& path) {
  std::unique_ptr<LlamaParameters> p(new LlamaParameters());
  p->path_ = path;
  if (llama::IsDirectory(path)) {  // Hugging Face: config.json + safetensors (+ tokenizer.json)
    HEXIR_ASSIGN_OR_RETURN(llama::HfLlama model, llama::LoadHfLlama(path));
    p->config_ = model.config;
    p->weights_ = std::move(model.weights);
    p->tokenizer_json_ = std::move(model.tokenizer_json);
    return p;
  }
  HEXIR_RETURN_IF_ERROR(MapFile(path, &p->data_, &p->size_));
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

Status LlamaParameters::SelectTensorParallelRank(int64_t ranks, int64_t rank) {
  StatusOr<std::vector<llama::WeightTensor>> parts =
      llama::TensorParallelWeights(config_, weights_, ranks, rank);
  if (!parts.ok()) return std::move(parts).status().WithContext(StrCat("'", path_, "'"));
  weights_ = std::move(*parts);
  return Status::Ok();
}

StatusOr<int32_t> LlamaParameters::CheckArguments(const std::vector<AbiType>& args, size_t first,
                                                  const std::string& function) const {
  if (args.size() != first + weights_.size())
    return InvalidArgument(function, " takes ", args.size(),
                           " arguments but checkpoint '", path_, "' has ", weights_.size(),
                           " weight tensors (expected ", first + weights_.size(),
                           "); import the module from this checkpoint");
  // Weights are f32 (llama2.c), f32/f16 (GGUF) or f32/f16/bf16 (safetensors) in the file; a
  // module imported with --weights=f16 takes f16, otherwise f32. GGUF matrices kept as
  // stored (block formats, bf16) are taken in that form (WeightTensor::ArgumentDims).
  const int32_t kF32 = static_cast<int32_t>(hal::ElementType::kF32);
  const int32_t kF16 = static_cast<int32_t>(hal::ElementType::kF16);
  int32_t weight_type = kF32;
  for (size_t i = 0; i < weights_.size(); ++i)
    if (!weights_[i].kept) {
      weight_type = args[first + i].element_type;
      break;
    }
  for (size_t i = 0; i < weights_.size(); ++i) {
    const AbiType& a = args[first + i];
    const llama::WeightTensor& w = weights_[i];
    const std::vector<int64_t> dims = w.ArgumentDims();
    const bool bad_type = w.kept ? a.element_type != KeptElementType(w)
                                 : a.element_type != weight_type || (weight_type != kF32 && weight_type != kF16);
    if (a.dims != dims || bad_type)
      return InvalidArgument(function, ": argument ", first + i, " is ", a.text,
                             " but checkpoint tensor '", w.name, "' (offset ", w.offset, ") is ",
                             w.kept ? StrCat(w.kept->name, " ") : std::string(),
                             hal::FormatShape(Span<const int64_t>(dims.data(), dims.size()),
                                              w.kept ? KeptElementType(w) : static_cast<int32_t>(w.type)),
                             !bad_type ? ""
                             : w.kept  ? " (a GGUF matrix kept as stored; import the module from this file)"
                                       : " (the module must take f32 or f16 weights, all of one type)");
  }
  return weight_type;
}

// A reusable host buffer for converted tensors; `in_flight` is the upload timeline value at
// which its last write has landed.
struct ConversionSlot {
  std::vector<uint8_t> gathered;  // a column part's rows, contiguous (WeightTensor::stored_columns)
  std::vector<float> values;
  std::vector<uint16_t> half;
  uint64_t in_flight = 0;
};

// One tensor's upload, planned on the calling thread (checked, buffer allocated).
struct PlannedTensor {
  const uint8_t* stored = nullptr;  // its first byte in the mapped file
  size_t row_bytes = 0, stored_row_bytes = 0;
  bool converted = false;
  vm::Ref<hal::Buffer> buffer;
};

struct LlamaParameters::PendingUpload::State {
  std::vector<vm::Ref<hal::BufferView>> views;
  hal::SemaphoreValue ready;
  std::map<std::string, std::unique_ptr<Shard>> shards;  // safetensors files by path
  ConversionSlot slots[kConversionSlots];
  std::vector<PlannedTensor> planned;
  std::vector<PendingUpload::Span> spans;  // WriteTensors', per tensor
  std::thread worker;  // UploadThread::kWorker: converts and writes
  Status worker_status;  // set by the worker before it exits
  bool waited = false;
  Status status;
};

LlamaParameters::PendingUpload::PendingUpload() : state_(std::make_unique<State>()) {}
LlamaParameters::PendingUpload::PendingUpload(PendingUpload&&) noexcept = default;
LlamaParameters::PendingUpload& LlamaParameters::PendingUpload::operator=(PendingUpload&& other) noexcept {
  if (this != &other) {
    if (state_) Wait().IgnoreError();
    state_ = std::move(other.state_);
  }
  return *this;
}
LlamaParameters::PendingUpload::~PendingUpload() {
  if (state_) Wait().IgnoreError();  // the queued writes may still read the host memory
}

const std::vector<vm::Ref<hal::BufferView>>& LlamaParameters::PendingUpload::views() const {
  return state_->views;
}
const hal::SemaphoreValue& LlamaParameters::PendingUpload::ready() const { return state_->ready; }
const std::vector<LlamaParameters::PendingUpload::Span>& LlamaParameters::PendingUpload::spans() const {
  return state_->spans;
}

Status LlamaParameters::PendingUpload::Wait() {
  if (!state_->waited) {
    state_->waited = true;
    if (state_->worker.joinable()) state_->worker.join();
    if (state_->ready.semaphore) state_->status = state_->ready.semaphore->Wait(state_->ready.value);
    if (state_->status.ok()) state_->status = state_->worker_status;
    state_->shards.clear();
    for (ConversionSlot& slot : state_->slots) slot = ConversionSlot();
  }
  return state_->status;
}

StatusOr<LlamaParameters::PendingUpload> LlamaParameters::UploadAsync(hal::Device& device,
                                                                      int32_t element_type,
                                                                      UploadThread thread) const {
  PendingUpload upload;
  PendingUpload::State& state = *upload.state_;
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<hal::Semaphore> timeline, device.CreateSemaphore(0));
  state.ready = {timeline, weights_.size()};
  // Plan every tensor first (checks, buffers, views: the views exist before any byte lands).
  for (size_t index = 0; index < weights_.size(); ++index) {
    const llama::WeightTensor& w = weights_[index];
    const uint8_t* file_data = data_;
    size_t file_size = size_;
    if (!w.file.empty()) {
      auto& shard = state.shards[w.file];
      if (!shard) {
        shard = std::make_unique<Shard>();
        HEXIR_RETURN_IF_ERROR(MapFile(w.file, &shard->data, &shard->size));
      }
      file_data = shard->data;
      file_size = shard->size;
    }
    PlannedTensor plan;
    size_t bytes = size_t(w.byte_size());
    // The bytes of the file the tensor spans: a column part's rows are stored_columns apart.
    // (kept block formats: whole blocks of those columns).
    plan.row_bytes = size_t(w.RowBytes(w.dims.size() > 1 ? w.dims[1] : 0));
    plan.stored_row_bytes = size_t(w.RowBytes(w.stored_columns));
    const size_t span = w.stored_columns > 0 ? size_t(w.dims[0] - 1) * plan.stored_row_bytes + plan.row_bytes : bytes;
    if (w.offset < 0 || size_t(w.offset) > file_size || span > file_size - size_t(w.offset))
      return InvalidArgument("tensor '", w.name, "' at offset ", w.offset, " (", span, " bytes) runs past the end of '",
                             w.file.empty() ? path_ : w.file, "'");
    plan.stored = file_data + w.offset;
    // Kept GGUF matrices (block formats, bf16) go as stored (a column part's blocks gathered);
    // the kernels decode them.
    const int32_t view_type = w.kept ? KeptElementType(w) : element_type;
    plan.converted = !w.kept && (static_cast<int32_t>(w.type) != element_type || w.rotate_half_heads > 0);
    if (plan.converted) bytes = bytes / (w.type == hal::ElementType::kF32 ? 4 : 2) *
                                (element_type == static_cast<int32_t>(hal::ElementType::kF16) ? 2 : 4);
    const std::vector<int64_t> view_dims = w.ArgumentDims();
    const Span<const int64_t> dims(view_dims.data(), view_dims.size());
    HEXIR_ASSIGN_OR_RETURN(uint64_t expected, hal::ComputeByteSize(dims, view_type));
    if (expected != bytes)
      return InvalidArgument("tensor '", w.name, "' ", hal::FormatShape(dims, view_type), " needs ", expected,
                             " bytes, got ", bytes);
    // Not zero-filled (the write covers every byte): QueueAlloca without semaphores.
    StatusOr<vm::Ref<hal::Buffer>> buffer = device.QueueAlloca({}, {}, bytes);
    if (!buffer.ok()) return std::move(buffer).status().WithContext(StrCat("tensor '", w.name, "'"));
    // Argument readiness: a call may use the buffer before its write landed (hal/buffer.h).
    (*buffer)->SetReadyAfter({timeline, index + 1});
    plan.buffer = *buffer;
    HEXIR_ASSIGN_OR_RETURN(auto view, hal::BufferView::Create(std::move(*buffer), view_type, view_dims));
    state.views.push_back(std::move(view));
    state.planned.push_back(std::move(plan));
  }
  if (thread == UploadThread::kCaller) {
    HEXIR_RETURN_IF_ERROR(WriteTensors(device, element_type, state, /*direct_host_writes=*/false));
    return upload;
  }
  // The worker converts and writes in layer order while the caller submits calls; a failure
  // fails the timeline, so the calls waiting for a tensor fail with its error.
  state.worker = std::thread([this, &device, element_type, &state] {
    Status st = WriteTensors(device, element_type, state, /*direct_host_writes=*/true);
    if (!st.ok()) {
      state.worker_status = st;
      state.ready.semaphore->Fail(std::move(st));
    }
  });
  return upload;
}

Status LlamaParameters::WriteTensors(hal::Device& device, int32_t element_type, PendingUpload::State& state,
                                     bool direct_host_writes) const {
  const int32_t kF16 = static_cast<int32_t>(hal::ElementType::kF16);
  hal::Semaphore& timeline = *state.ready.semaphore;
  for (size_t index = 0; index < weights_.size(); ++index) {
    const llama::WeightTensor& w = weights_[index];
    PlannedTensor& plan = state.planned[index];
    const int64_t begin_ns = hal::ProfileClockNs();
    const uint8_t* stored = plan.stored;
    const void* data = stored;
    size_t bytes = size_t(w.byte_size());
    if (w.stored_columns > 0 || plan.converted) {
      // The slot's previous tensor must have landed before its memory is overwritten.
      ConversionSlot& slot = state.slots[index % kConversionSlots];
      if (slot.in_flight > 0) {
        Status landed = timeline.Wait(slot.in_flight);
        if (!landed.ok()) return std::move(landed).WithContext(StrCat("uploading tensor '", w.name, "'"));
      }
      slot.in_flight = index + 1;
      if (w.stored_columns > 0) {  // a row-parallel part: gather its columns of every row
        slot.gathered.resize(size_t(w.dims[0]) * plan.row_bytes);
        for (int64_t r = 0; r < w.dims[0]; ++r)
          std::memcpy(&slot.gathered[size_t(r) * plan.row_bytes], stored + size_t(r) * plan.stored_row_bytes,
                      plan.row_bytes);
        stored = slot.gathered.data();
        data = stored;
      }
      if (plan.converted) {
        const size_t n = bytes / (w.type == hal::ElementType::kF32 ? 4 : 2);
        if (element_type == kF16 && w.type == hal::ElementType::kF32 && w.rotate_half_heads == 0) {
          slot.half.resize(n);  // straight from the mapping: one pass over its pages
          ConvertF32ToF16(stored, n, slot.half.data());
        } else {
          std::vector<float>& values = slot.values;
          values.resize(n);
          ConvertToF32(stored, n, w.type == hal::ElementType::kF32 ? 4 : 2,
                       w.type == hal::ElementType::kBF16, values.data());
          if (w.rotate_half_heads > 0) PermuteRotateHalfRows(w, &values);
          if (element_type == kF16) {
            slot.half.resize(n);
            ConvertF32ToF16(reinterpret_cast<const uint8_t*>(values.data()), n, slot.half.data());
          }
        }
        data = element_type == kF16 ? static_cast<const void*>(slot.half.data()) : slot.values.data();
        bytes = n * (element_type == kF16 ? 2 : 4);
      }
    }
    if (direct_host_writes && plan.buffer->host_data()) {
      // Host memory (CPU): copied here and signalled from this thread. A queue write would
      // queue behind the calls already waiting for it on an in-order host queue.
      std::memcpy(plan.buffer->host_data(), data, bytes);
      HEXIR_RETURN_IF_ERROR(timeline.Signal(index + 1).WithContext(StrCat("tensor '", w.name, "'")));
    } else {
      HEXIR_RETURN_IF_ERROR(device.QueueWrite({}, {{state.ready.semaphore, index + 1}}, data, bytes, plan.buffer, 0)
                                .WithContext(StrCat("tensor '", w.name, "'")));
    }
    state.spans.push_back({begin_ns, hal::ProfileClockNs()});
  }
  return Status::Ok();
}

StatusOr<std::vector<vm::Ref<hal::BufferView>>> LlamaParameters::Upload(hal::Device& device,
                                                                        int32_t element_type) const {
  HEXIR_ASSIGN_OR_RETURN(PendingUpload upload, UploadAsync(device, element_type));
  HEXIR_RETURN_IF_ERROR(upload.Wait());
  return upload.views();
}

}  // namespace hexir::tools
