// The weights of a llama2.c or GGUF checkpoint, or a Hugging Face folder (config.json +
// safetensors), for the module hexir-import made from it: memory-mapped, in the order
// @generate takes them after (prompt, max_tokens), and uploaded to a device once
// (hexir-generate, the Python package's hexir.Parameters).
//
// Ownership: a LlamaParameters owns the read-only mapping of a checkpoint file (unmapped on
// destruction); a folder's safetensors shards are mapped during Upload only. Uploaded views
// are independent device buffers. Immutable after Open, so thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"
#include "hal/api.h"
#include "tools/common/invocation.h"

namespace hexir::tools {

// Permutes the rows of a Hugging Face q/k matrix `w` (w.rotate_half_heads > 0), stored as
// f32 `values`, from rotate-half to interleaved rotary pairs (the program's and GGUF's layout).
void PermuteRotateHalfRows(const compiler::llama::WeightTensor& w, std::vector<float>* values);

class LlamaParameters {
 public:
  // A directory is loaded as a Hugging Face folder (compiler/importers/llama/HfLlama.h);
  // otherwise maps `path` and parses it as GGUF (by its magic) or as a llama2.c checkpoint.
  // Errors name the path (missing, empty, malformed header with the field's offset).
  static StatusOr<std::unique_ptr<LlamaParameters>> Open(const std::string& path);
  ~LlamaParameters();

  const std::string& path() const { return path_; }
  // The mapped checkpoint file (GGUF or llama2.c); null and 0 for a Hugging Face folder.
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // A Hugging Face folder's tokenizer.json text; empty when absent or not a folder.
  const std::string& tokenizer_json() const { return tokenizer_json_; }
  const compiler::llama::LlamaConfig& config() const { return config_; }
  const std::vector<compiler::llama::WeightTensor>& weights() const { return weights_; }

  // Tensor parallelism: from now on weights() are rank `rank`'s parts of `ranks`
  // (compiler/importers/llama/TensorParallel.h), which CheckArguments and UploadAsync use: each
  // rank uploads only its part (a column part is gathered row by row on the host). Errors: a
  // model that does not split over `ranks` (naming the counts), a kept GGUF matrix.
  Status SelectTensorParallelRank(int64_t ranks, int64_t rank);

  // Checks that args[first..] of `function` (named in errors: "module 'm.vmfb': @generate")
  // are exactly these weights (count, dims, one element type that is f32 or f16 for the dense
  // ones; GGUF matrices kept as stored in their form, WeightTensor::ArgumentDims) and returns
  // the dense type; errors also name the argument and the tensor.
  StatusOr<int32_t> CheckArguments(const std::vector<AbiType>& args, size_t first,
                                   const std::string& function) const;

  // An upload in flight (UploadAsync). The views' buffers may be used by queue work ordered
  // after `ready` (e.g. a QueueExecute that waits for it: every later submission of an
  // in-order queue is then ordered too). Owns the host memory the queued writes read (the
  // conversion ring and the shards' mappings) until `ready`: Wait() or the destructor waits
  // for it first. Move-only.
  class PendingUpload {
   public:
    PendingUpload();
    PendingUpload(PendingUpload&&) noexcept;
    PendingUpload& operator=(PendingUpload&&) noexcept;
    ~PendingUpload();

    const std::vector<vm::Ref<hal::BufferView>>& views() const;
    const hal::SemaphoreValue& ready() const;
    // Per tensor, in argument order: {start of its conversion (or write), its write's end}
    // on the steady clock (hal::ProfileClockNs); the end is the signal for a host-visible
    // buffer filled directly, the issue of the queue write otherwise. Complete after Wait().
    struct Span {
      int64_t begin_ns = 0, end_ns = 0;
    };
    const std::vector<Span>& spans() const;
    // Joins the worker (UploadThread::kWorker), one host wait for `ready` (the first failed
    // write's error names its tensor's range), then frees the host memory. Idempotent.
    Status Wait();

   private:
    friend class LlamaParameters;
    struct State;
    std::unique_ptr<State> state_;
  };

  // Issues every weight as a queue write (Device::QueueWrite), as `element_type` (f32 or
  // f16; GGUF matrices kept as stored go as their file bytes), in argument order, which is layer order (embedding, layer 0's tensors, ...). A
  // tensor already in that type and layout is written from the mapping as is (its pages are
  // read once, by the copy); others are converted on the host (f16/bf16 -> f32 exact, f32/bf16
  // -> f16 round to nearest even, Hugging Face q/k rows (rotate_half_heads) permuted from
  // rotate-half to interleaved pairs) into one of kConversionSlots reused host buffers while
  // the previous tensors are on the wire; a slot is reused after its write's signal (the only
  // host waits). A weight with a `file` is read from that file (sharded safetensors).
  // Every view's buffer exists on return and carries its write's timeline value as its
  // readiness (hal::Buffer::SetReadyAfter): a call may be submitted at once, and its commands
  // wait for exactly the tensors they read (per command on the CPU and CUDA drivers, at the
  // submission on others).
  // `thread`: kCaller converts and issues every write before returning; kWorker returns once
  // the buffers exist and converts and writes on a worker thread, in the same order, while the
  // caller goes on (a host-visible buffer, as on the CPU driver, is then filled directly and
  // its value signalled from the worker: a queue write would queue behind the call waiting for
  // it). A worker's error fails the timeline (calls waiting for a tensor fail with it) and is
  // returned by Wait().
  // Errors: a tensor whose offset and size run past the end of its file (naming the tensor
  // and the file), allocation and write errors (naming the tensor).
  static constexpr int kConversionSlots = 3;
  enum class UploadThread { kCaller, kWorker };
  StatusOr<PendingUpload> UploadAsync(hal::Device& device, int32_t element_type,
                                      UploadThread thread = UploadThread::kCaller) const;

  // UploadAsync, then Wait: the views are ready on return.
  StatusOr<std::vector<vm::Ref<hal::BufferView>>> Upload(hal::Device& device,
                                                         int32_t element_type) const;

 private:
  LlamaParameters() = default;
  // UploadAsync's conversions and writes of the planned tensors, in order.
  Status WriteTensors(hal::Device& device, int32_t element_type, PendingUpload::State& state,
                      bool direct_host_writes) const;
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  compiler::llama::LlamaConfig config_;
  std::vector<compiler::llama::WeightTensor> weights_;
  std::string tokenizer_json_;
};

}  // namespace hexir::tools
