#include "tools/hexir-generate/decode_calls.h"

#include <cstdio>
#include <cstring>

#include "base/interrupt.h"
#include "tools/common/invocation.h"

namespace hexir::tools {

StatusOr<std::optional<TensorParallelRank>> QueryTensorParallel(DecodeContext target,
                                                                const std::string& module_path) {
  StatusOr<vm::Function> fn = target.context.LookupFunction("tensor_parallel");
  if (!fn.ok()) return std::optional<TensorParallelRank>();
  std::vector<HostValue> r;
  HEXIR_RETURN_IF_ERROR(CallFunction(target.context, target.devices, *fn, {}, &r));
  if (r.size() != 3)
    return InvalidArgument("module '", module_path, "': @tensor_parallel returned ", r.size(), " values, expected 3");
  return std::optional<TensorParallelRank>(TensorParallelRank{r[0].i, r[1].i, r[2].i});
}

StatusOr<int64_t> FitToCache(DecodeContext target, const std::string& module_path,
                             size_t prompt_length, int64_t max_tokens, int64_t seq_len, bool verbose) {
  // The KV cache must hold the prompt (prefill writes every prompt position) and bounds the
  // output: @generate sizes its id tensor by max_new, so a larger request would only cost memory.
  StatusOr<vm::Function> fn = target.context.LookupFunction("cache_len");
  if (!fn.ok()) return max_tokens;
  std::vector<HostValue> r;
  HEXIR_RETURN_IF_ERROR(CallFunction(target.context, target.devices, *fn, {}, &r));
  int64_t cache_len = -1;
  if (r.size() == 1 && r[0].tensor.bytes.size() == 8) std::memcpy(&cache_len, r[0].tensor.bytes.data(), 8);
  if (int64_t(prompt_length) > cache_len)
    return InvalidArgument("the prompt has ", prompt_length, " tokens but module '", module_path,
                           "' has a KV cache of ", cache_len,
                           " positions (hexir-import --cache-len, at most the header's seq_len ", seq_len, ")");
  if (max_tokens > cache_len) {
    if (verbose) {
      std::fprintf(stderr, "hexir-generate: --max-tokens=%lld clamped to the cache length %lld\n",
                   static_cast<long long>(max_tokens), static_cast<long long>(cache_len));
    }
    max_tokens = cache_len;
  }
  return max_tokens;
}

Status OrderAfter(hal::Device& device, const hal::SemaphoreValue& ready) {
  auto barrier = vm::MakeRef<hal::CommandBuffer>(nullptr);  // internal: not a recording
  HEXIR_RETURN_IF_ERROR(barrier->Finalize());
  return device.QueueExecute({ready}, barrier, {});
}

Status CallGenerate(DecodeContext target, const vm::Function& generate,
                    const vm::Ref<hal::BufferView>& prompt, int64_t max_tokens,
                    const std::vector<vm::Ref<hal::BufferView>>& weights, double timeout_seconds,
                    std::vector<int64_t>* ids) {
  std::vector<vm::Variant> in(2 + weights.size());
  in[0].ref = prompt;
  in[1].bits = max_tokens;
  for (size_t i = 0; i < weights.size(); ++i) in[2 + i].ref = weights[i];
  std::vector<vm::Variant> out;
  // The timeout bounds the call with the download of its ids (DeadlineExceeded past it).
  vm::InvokeOptions options;
  if (timeout_seconds > 0) options.deadline_ns = Interrupt::DeadlineAfter(timeout_seconds);
  const Interrupt download_deadline(options.deadline_ns, nullptr, Interrupt::NowNs());
  HEXIR_RETURN_IF_ERROR(target.context.Invoke(generate, Span<vm::Variant>(in.data(), in.size()), &out, options));
  auto* view = out.empty() ? nullptr : vm::RefCast<hal::BufferView>(out[0].ref.get());
  if (!view) return Internal("@generate returned no id tensor");
  std::vector<uint8_t> bytes;
  HEXIR_RETURN_IF_ERROR(hal::BufferViewToHost(*target.devices[0], *view, &bytes, download_deadline));
  ids->clear();
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    int64_t id;
    std::memcpy(&id, &bytes[i], 8);
    if (id < 0) break;
    ids->push_back(id);
  }
  return Status::Ok();
}

}  // namespace hexir::tools
