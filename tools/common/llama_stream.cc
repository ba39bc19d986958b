#include "tools/common/llama_stream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "compiler/importers/llama/Sampler.h"
#include "hal/element_type.h"

namespace hexir::tools {
namespace {

namespace llama = compiler::llama;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

StatusOr<int64_t> ReadI64(hal::Device& device, const vm::Variant& v, size_t index, const Interrupt& deadline) {
  auto* view = vm::RefCast<hal::BufferView>(v.ref.get());
  if (!view) return Internal("streaming state ", index, " is not a tensor");
  std::vector<uint8_t> bytes;
  HEXIR_RETURN_IF_ERROR(hal::BufferViewToHost(device, *view, &bytes, deadline));
  if (bytes.size() < 8) return Internal("streaming state ", index, " holds ", bytes.size(), " bytes, not an i64");
  int64_t x;
  std::memcpy(&x, bytes.data(), 8);
  return x;
}

}  // namespace

Status ValidateSamplerSettings(const SamplerSettings& s) {
  if (!(s.temperature >= 0) || std::isinf(s.temperature))
    return InvalidArgument("temperature ", s.temperature, " must be a finite number >= 0");
  if (!(s.top_p >= 0 && s.top_p <= 1)) return InvalidArgument("top-p ", s.top_p, " must be in [0, 1]");
  if (!(s.min_p >= 0 && s.min_p <= 1)) return InvalidArgument("min-p ", s.min_p, " must be in [0, 1]");
  if (!(s.repetition_penalty > 0) || std::isinf(s.repetition_penalty))
    return InvalidArgument("repetition penalty ", s.repetition_penalty, " must be a finite number > 0");
  if (s.repeat_last_n < 0 || s.repeat_last_n > llama::kRepetitionWindow)
    return InvalidArgument("repeat-last-n ", s.repeat_last_n, " must be in [0, ", llama::kRepetitionWindow, "]");
  return Status::Ok();
}

Status StreamGenerate(Session& session, const std::vector<vm::Ref<hal::BufferView>>& weights,
                      Span<const int64_t> prompt, int64_t max_tokens, const SamplerSettings& sampler,
                      const TokenCallback& on_ids, StreamTiming* timing, const vm::InvokeOptions& options) {
  HEXIR_RETURN_IF_ERROR(ValidateSamplerSettings(sampler));
  if (prompt.empty()) return InvalidArgument("the prompt is empty (give at least BOS)");
  StatusOr<vm::Function> begin = session.LookupFunction("generate_begin");
  StatusOr<vm::Function> chunk = session.LookupFunction("generate_chunk");
  if (!begin.ok() || !chunk.ok())
    return FailedPrecondition("the module has no @generate_begin/@generate_chunk (imported before sampling and "
                              "streaming existed): import and compile it again");
  hal::Device& device = session.device();
  float floats[llama::kSamplerFloats] = {};
  floats[llama::kTemperature] = sampler.temperature;
  floats[llama::kTopP] = sampler.top_p;
  floats[llama::kMinP] = sampler.min_p;
  floats[llama::kRepetitionPenalty] = sampler.repetition_penalty;
  int64_t ints[llama::kSamplerInts] = {};
  ints[llama::kSeed] = sampler.seed;
  ints[llama::kTopK] = sampler.top_k;
  ints[llama::kRepetitionLastN] = sampler.repeat_last_n;
  const int64_t n_prompt = int64_t(prompt.size()), n_floats = llama::kSamplerFloats, n_ints = llama::kSamplerInts;
  HEXIR_ASSIGN_OR_RETURN(auto prompt_view, hal::BufferViewFromHost(device, int32_t(hal::ElementType::kI64),
                                                                   Span<const int64_t>(&n_prompt, 1), prompt.data(),
                                                                   prompt.size() * 8));
  HEXIR_ASSIGN_OR_RETURN(auto floats_view, hal::BufferViewFromHost(device, int32_t(hal::ElementType::kF32),
                                                                   Span<const int64_t>(&n_floats, 1), floats,
                                                                   sizeof(floats)));
  HEXIR_ASSIGN_OR_RETURN(auto ints_view, hal::BufferViewFromHost(device, int32_t(hal::ElementType::kI64),
                                                                 Span<const int64_t>(&n_ints, 1), ints, sizeof(ints)));
  const Interrupt deadline(options.deadline_ns, nullptr, Interrupt::NowNs());

  // state = (pos, n, token, stop flag, ids, caches...): the results of one call, arguments of the next.
  std::vector<vm::Variant> state;
  int64_t reported = 0, last_n = -1;
  StreamTiming t;
  for (bool first = true;; first = false) {
    const Clock::time_point start = Clock::now();
    std::vector<vm::Variant> in = {{}, {}, {}, {}};
    in[0].ref = prompt_view;
    in[1].bits = max_tokens;
    in[2].ref = floats_view;
    in[3].ref = ints_view;
    for (vm::Variant& v : state) in.push_back(std::move(v));
    for (const auto& w : weights) in.emplace_back().ref = w;
    std::vector<vm::Variant> out;
    HEXIR_RETURN_IF_ERROR(session.context().Invoke(first ? *begin : *chunk, Span<vm::Variant>(in.data(), in.size()),
                                                   &out, options));
    if (out.size() < 5) return Internal("@generate_", first ? "begin" : "chunk", " returned ", out.size(), " results");
    const int64_t pos = out[0].bits, n = out[1].bits;
    HEXIR_ASSIGN_OR_RETURN(int64_t stopped, ReadI64(device, out[3], 3, deadline));
    auto* ids_view = vm::RefCast<hal::BufferView>(out[4].ref.get());
    if (!ids_view) return Internal("streaming state 4 (the ids) is not a tensor");
    std::vector<uint8_t> bytes;
    HEXIR_RETURN_IF_ERROR(hal::BufferViewToHost(device, *ids_view, &bytes, deadline));
    (first ? t.prompt_seconds : t.generate_seconds) += Since(start);
    // New ids: those written since the last report (-1 marks ids not generated: after a stop).
    std::vector<int64_t> fresh;
    const int64_t available = std::min<int64_t>(n, int64_t(bytes.size() / 8));
    for (int64_t i = reported; i < available; ++i) {
      int64_t id;
      std::memcpy(&id, &bytes[i * 8], 8);
      if (id < 0) break;
      fresh.push_back(id);
    }
    reported += int64_t(fresh.size());
    t.generated = reported;
    HEXIR_RETURN_IF_ERROR(on_ids(Span<const int64_t>(fresh.data(), fresh.size())));
    // Done after a stop id, at max_tokens (clamped by the program to the ids' length), or when
    // a chunk could not advance (the KV cache is full: pos = its length).
    const int64_t limit = int64_t(bytes.size() / 8);
    if (stopped != 0 || n >= limit || (!first && n == last_n)) break;
    last_n = n;
    (void)pos;
    state = std::move(out);
  }
  if (timing) *timing = t;
  return Status::Ok();
}

}  // namespace hexir::tools
