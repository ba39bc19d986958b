// hexir-generate: greedy text generation with a module made by
// `hexir-import CKPT.bin|MODEL.gguf -o llm.mlir && hexir-compile llm.mlir -o llm.vmfb`.
//
//   hexir-generate --module=llm.vmfb [--device=cpu|cuda ...] --parameters=CKPT.bin|MODEL.gguf
//                  [--tokenizer=TOK.bin] [--prompt=TEXT] --max-tokens=N
// prints `ids: 403 407 ...` (generated ids; BOS excluded; the stopping token included) and,
// with a tokenizer, the decoded text on the next line. A tensor-parallel module runs on N
// devices of this process (--device repeated: one rank each, rank_generate.h) or as
// `mpirun -n N hexir-generate ...` (one device per rank; rank 0 prints); a placed module takes
// its devices in --target order.
//
// The checkpoint (llama2.c, or GGUF when it starts with the GGUF magic; a Hugging Face folder
// maps its safetensors files) is memory-mapped and each weight tensor uploaded once
// (tools/common/llama_parameters.h: the order, offsets, files and stored types come from
// compiler/importers/llama; a tensor stored in another type than the module takes, f32 or
// f16, is converted once, and Hugging Face q/k rows are permuted), and the same device buffers
// are passed on every call of @generate (--repeat calls it again).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/Gguf.h"
#include "hal/api.h"
#include "hal/element_type.h"
#include "tools/common/invocation.h"
#include "runtime/rank_group.h"
#include "tools/common/device_trace.h"
#include "tools/common/llama_parameters.h"
#include "tools/common/llama_stream.h"
#include "tools/common/rank_sessions.h"
#include "tools/common/flag_checks.h"
#include "tools/common/tool_main.h"
#include "tools/hexir-generate/decode_calls.h"
#include "tools/hexir-generate/rank_generate.h"
#include "tools/hexir-generate/tokenizer.h"
#include "tools/hexir-generate/vocabulary.h"

namespace hexir::tools {
namespace {

namespace llama = compiler::llama;

struct Flags {
  std::string module, parameters, tokenizer, prompt, prompt_ids;
  std::vector<std::string> devices;  // by module device ordinal, or one rank each; empty: cpu
  int64_t max_tokens = -1;
  int cpu_threads = -1;
  int repeat = 1;
  double timeout_seconds = 0;  // 0: none
  bool timing = false;
  bool verbose = false;
  bool tokenize_only = false;
  bool stream = false;        // print the text as each decode chunk ends, then the speeds
  SamplerSettings sampler;    // temperature 0 and no penalty: @generate's greedy loop
  int64_t seed = -1;          // -1: a random seed
  std::string trace;          // --trace: a tensor-parallel run's dispatches and collectives per rank
};

// --timing's startup breakdown: milliseconds since main() began, per stage.
using Clock = std::chrono::steady_clock;
Clock::time_point g_main_start;
double MsSinceStart(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t - g_main_start).count();
}

// --stream and sampling run the streaming pair (@generate_begin/@generate_chunk), which
// tensor-parallel and placed programs do not have (compiler/importers/llama/README.md).
Status StreamingRefused(const Flags& f, const std::string& why) {
  return InvalidArgument("module '", f.module, "' has @generate only (", why, "): ",
                         f.stream ? "--stream" : "sampling (--temperature, --repetition-penalty)",
                         " needs @generate_begin/@generate_chunk, which hexir-import writes for "
                         "single-device modules only");
}

// The text of generated ids after `prompt`, by the file's vocabulary or a llama2.c tokenizer.
struct TextDecoder {
  const Vocabulary* vocabulary;
  const Tokenizer* tokenizer;
  const std::vector<int64_t>& prompt;
  int64_t bos_id;
  bool has_tokenizer() const { return vocabulary || tokenizer; }
  std::string operator()(const std::vector<int64_t>& ids) const {
    if (vocabulary) {
      // llama.cpp drops the first piece's leading space when the text starts there (BOS only).
      bool from_bos = prompt.size() == 1 && prompt[0] == bos_id;
      return vocabulary->Decode(ids, from_bos);
    }
    std::string text;
    int64_t prev = prompt.back();
    for (int64_t id : ids) {
      text += tokenizer->Decode(prev, id);
      prev = id;
    }
    return text;
  }
};

// "ids: 403 407 ..." and, with a tokenizer, the text on the next line.
Status PrintIds(const std::vector<int64_t>& ids, const TextDecoder& decode) {
  std::string line = "ids:";
  for (int64_t id : ids) line += " " + std::to_string(id);
  std::printf("%s\n", line.c_str());
  if (decode.has_tokenizer()) std::printf("%s\n", decode(ids).c_str());
  return Status::Ok();
}

// The CPU time this process has used, every thread's (CLOCK_PROCESS_CPUTIME_ID), in seconds.
double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// --timing's last line: the fastest call's time and generated tokens/s, then (when measured:
// `best_cpu_seconds` >= 0) the least CPU time of a call and its share per generated token.
// CPU time is what a shared machine's load leaves comparable: a preempted call's wall grows,
// its CPU time does not.
void PrintSpeed(size_t prompt_length, size_t generated, double best_seconds, int repeat,
                double best_cpu_seconds = -1) {
  std::fprintf(stderr, "hexir-generate: %zu prompt + %zu generated tokens in %.3f ms (fastest of %d): %.1f tokens/s",
               prompt_length, generated, best_seconds * 1e3, std::max(1, repeat), double(generated) / best_seconds);
  if (best_cpu_seconds >= 0)
    std::fprintf(stderr, "; CPU time %.3f ms (least of %d), %.3f ms per token", best_cpu_seconds * 1e3,
                 std::max(1, repeat), best_cpu_seconds * 1e3 / double(std::max<size_t>(generated, 1)));
  std::fprintf(stderr, "\n");
}

// The tokenizer the parameter file carries (a Hugging Face folder's tokenizer.json, a GGUF's
// tokenizer.ggml.* metadata); null when it has none or --tokenizer names a llama2.c one.
StatusOr<std::unique_ptr<Vocabulary>> FileVocabulary(const Flags& f, const LlamaParameters& parameters) {
  const llama::LlamaConfig& config = parameters.config();
  if (f.tokenizer.empty() && !parameters.tokenizer_json().empty()) {  // Hugging Face tokenizer.json
    HEXIR_ASSIGN_OR_RETURN(Vocabulary v, Vocabulary::FromHfTokenizerJson(parameters.tokenizer_json(),
                                                                         config.bos_id, config.eos_id));
    return std::make_unique<Vocabulary>(std::move(v));
  }
  if (f.tokenizer.empty() && parameters.data() && llama::IsGguf(parameters.data(), parameters.size())) {
    StatusOr<llama::GgufFile> gguf = llama::ParseGguf(parameters.data(), parameters.size());
    if (!gguf.ok()) return std::move(gguf).status().WithContext(StrCat("'", f.parameters, "'"));
    if (gguf->Find("tokenizer.ggml.model")) {
      StatusOr<Vocabulary> v = Vocabulary::FromGguf(*gguf);
      if (!v.ok()) return std::move(v).status().WithContext(StrCat("'", f.parameters, "'"));
      return std::make_unique<Vocabulary>(std::move(*v));
    }
  }
  return std::unique_ptr<Vocabulary>();
}

// The prompt's token ids: BOS alone, --prompt encoded by `vocabulary` (else `tokenizer`), or
// --prompt-ids as given; every id checked against the vocabulary size.
StatusOr<std::vector<int64_t>> PromptIds(const Flags& f, const llama::LlamaConfig& config,
                                         const Vocabulary* vocabulary, const Tokenizer* tokenizer) {
  std::vector<int64_t> prompt = {config.bos_id};
  if (!f.prompt.empty()) {
    if (!tokenizer && !vocabulary)
      return InvalidArgument("--prompt needs a tokenizer: --tokenizer, or a GGUF with tokenizer.ggml.* metadata, or a "
                             "Hugging Face folder with tokenizer.json");
    if (!f.prompt_ids.empty()) return InvalidArgument("give --prompt or --prompt-ids, not both");
    if (vocabulary) {
      prompt = vocabulary->Encode(f.prompt, /*add_bos=*/true);  // BOS when the file says so
      if (prompt.empty()) prompt = {config.bos_id};
    } else {
      for (int64_t id : tokenizer->Encode(f.prompt)) prompt.push_back(id);
    }
  }
  if (!f.prompt_ids.empty()) {
    prompt.clear();
    std::string item;
    for (size_t i = 0; i <= f.prompt_ids.size(); ++i) {
      if (i < f.prompt_ids.size() && f.prompt_ids[i] != ',') {
        item += f.prompt_ids[i];
        continue;
      }
      char* end = nullptr;
      long long id = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end) return InvalidArgument("--prompt-ids: '", item, "' is not a token id");
      prompt.push_back(id);
      item.clear();
    }
  }
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= config.vocab_size)
      return InvalidArgument("prompt token ", i, " is ", prompt[i], ", outside the vocabulary 0..",
                             config.vocab_size - 1);
  return prompt;
}

// --tokenize-only (llama-tokenize's job): the prompt's ids and llama_detokenize of them.
void PrintTokenization(const std::vector<int64_t>& prompt, const Vocabulary* vocabulary) {
  std::string line = "ids:";
  for (int64_t id : prompt) line += " " + std::to_string(id);
  std::printf("%s\n", line.c_str());
  if (vocabulary) std::printf("%s\n", vocabulary->Decode(prompt).c_str());
}

// A tensor-parallel module given --device once per rank: every rank a device of this process.
Status RunOnRanks(const Flags& f, const vm::Module& module, const InvocationOptions& options, bool greedy,
                  const std::vector<int64_t>& prompt, const TextDecoder& decode) {
  if (!greedy || f.stream) {
    return InvalidArgument("module '", f.module, "' runs as ", options.device_uris.size(),
                           " ranks: greedy decoding only (a tensor-parallel module has no sampler or "
                           "streaming functions), so --stream, --temperature and --repetition-penalty are refused");
  }
  RankGenerateRequest request{f.module,          f.parameters,      prompt,    f.max_tokens,
                              f.repeat,          f.timeout_seconds, f.verbose, f.trace};
  RankGenerateResult result;
  HEXIR_RETURN_IF_ERROR(GenerateOnRanks(module, options, request, &result));
  HEXIR_RETURN_IF_ERROR(PrintIds(result.ids, decode));
  if (f.timing) PrintSpeed(prompt.size(), result.ids.size(), result.best_seconds, f.repeat);
  return Status::Ok();
}

// A tensor-parallel module (hexir-import --tensor-parallel=N) run as one process per rank
// (mpirun) reports (N, rank, ranks) from its device's channel (the mpirun world): this rank
// uploads only its weight parts, and only rank 0 prints (every rank computes the same ids).
// Returns whether this process prints.
StatusOr<bool> SelectRank(const Flags& f, const DecodeContext& target, bool streams, LlamaParameters& parameters) {
  HEXIR_ASSIGN_OR_RETURN(std::optional<TensorParallelRank> tp, QueryTensorParallel(target, f.module));
  if (!tp) return true;
  if (streams) return StreamingRefused(f, StrCat("tensor-parallel over ", tp->ranks, " ranks"));
  if (tp->count != tp->ranks)
    return InvalidArgument("module '", f.module, "' is tensor-parallel over ", tp->ranks, " ranks but runs on ",
                           tp->count, " (start it with mpirun -n ", tp->ranks, ", or give --device ", tp->ranks,
                           " times)");
  HEXIR_RETURN_IF_ERROR(parameters.SelectTensorParallelRank(tp->ranks, tp->rank));
  if (f.verbose) std::fprintf(stderr, "hexir-generate: tensor-parallel rank %lld of %lld\n",
                              static_cast<long long>(tp->rank), static_cast<long long>(tp->ranks));
  return tp->rank == 0;
}

// --timing's startup marks (a default time point where a stage did not happen).
struct StartupMarks {
  Clock::time_point parameters_mapped, module_load_begin, module_loaded, upload_begin, upload_issued,
      upload_landed, first_call_done;
};

// The calls' results: the last call's ids, the fastest call's time and the least CPU time
// (the process's) of a call.
struct Calls {
  std::vector<int64_t> ids;
  double best_seconds = 1e30;
  double best_cpu_seconds = 1e30;

  // Notes one call that began at `start` with the process's CPU time at `cpu_start`.
  void Time(Clock::time_point start, double cpu_start) {
    best_cpu_seconds = std::min(best_cpu_seconds, ProcessCpuSeconds() - cpu_start);
    best_seconds = std::min(best_seconds, std::chrono::duration<double>(Clock::now() - start).count());
  }
};

// Sampling or --stream: f.repeat calls through the streaming pair; with --stream the last
// call's text is printed as each chunk adds to it, then the speeds.
Status StreamCalls(const Flags& f, Session& session, const std::vector<vm::Ref<hal::BufferView>>& weight_views,
                   const std::vector<int64_t>& prompt, int64_t max_tokens, const TextDecoder& decode, Calls* calls,
                   StartupMarks* marks) {
  SamplerSettings sampler = f.sampler;
  sampler.seed = f.seed >= 0 ? f.seed : int64_t(std::random_device()() & 0x7fffffff);
  if (f.verbose) std::fprintf(stderr, "hexir-generate: seed %lld\n", static_cast<long long>(sampler.seed));
  // Streaming prints what each chunk adds to the text already printed.
  StreamTiming timing;
  std::vector<int64_t>& ids = calls->ids;
  for (int call = 0; call < std::max(1, f.repeat); ++call) {
    ids.clear();
    std::string printed;
    const bool print = f.stream && call == std::max(1, f.repeat) - 1;
    vm::InvokeOptions call_options;
    if (f.timeout_seconds > 0) call_options.deadline_ns = Interrupt::DeadlineAfter(f.timeout_seconds);
    const double cpu_start = ProcessCpuSeconds();
    auto start = Clock::now();
    HEXIR_RETURN_IF_ERROR(StreamGenerate(
        session, weight_views, prompt, max_tokens, sampler,
        [&](Span<const int64_t> fresh) -> Status {
          ids.insert(ids.end(), fresh.begin(), fresh.end());
          if (!print || fresh.empty()) return Status::Ok();
          std::string piece;
          if (decode.has_tokenizer()) {
            std::string text = decode(ids);
            if (text.compare(0, printed.size(), printed) == 0) piece = text.substr(printed.size());
            printed = text;
          } else {
            for (int64_t id : fresh) {  // no tokenizer: the ids, separated by spaces
              piece += (printed.empty() ? "" : " ") + std::to_string(id);
              printed = "ids";
            }
          }
          if (std::fputs(piece.c_str(), stdout) < 0 || std::fflush(stdout) != 0)
            return Internal("writing to standard output failed");
          return Status::Ok();
        },
        &timing, call_options));
    calls->Time(start, cpu_start);
    if (call == 0) marks->first_call_done = Clock::now();
  }
  if (f.stream) {
    const int64_t prompt_len = int64_t(prompt.size());
    std::printf("\n");
    const int64_t later = std::max<int64_t>(timing.generated - 1, 0);
    std::fprintf(stderr,
                 "hexir-generate: prompt %lld tokens + first token in %.2f ms (%.1f prompt tokens/s); "
                 "generation %lld tokens in %.2f ms (%.1f tokens/s)\n",
                 static_cast<long long>(prompt_len), timing.prompt_seconds * 1e3,
                 double(prompt_len) / std::max(timing.prompt_seconds, 1e-9), static_cast<long long>(later),
                 timing.generate_seconds * 1e3, double(later) / std::max(timing.generate_seconds, 1e-9));
  }
  return Status::Ok();
}

// --timing: the startup breakdown (milliseconds since main) and the speed line.
void PrintStartup(const StartupMarks& m, const std::vector<vm::Ref<hal::BufferView>>& weight_views,
                  bool worker_upload, size_t prompt_length, const Calls& calls, int repeat) {
  uint64_t upload_bytes = 0;
  for (const auto& v : weight_views) upload_bytes += v->byte_size();
  const size_t n = std::max<size_t>(calls.ids.size(), 1);
  const double per_token_ms = calls.best_seconds * 1e3 / double(n);
  const double first_call_ms = MsSinceStart(m.first_call_done);
  std::fprintf(stderr,
               "hexir-generate: startup (ms since main): parameters mapped %.1f, module loaded %.1f "
               "(load %.1f), upload started %.1f (%s %.1f: %zu tensors, %.1f MiB%s), upload "
               "complete %.1f, first call done %.1f (%zu tokens), first token ~%.1f (first call less "
               "%zu per-token times), per token %.3f ms\n",
               MsSinceStart(m.parameters_mapped), MsSinceStart(m.module_loaded),
               std::chrono::duration<double, std::milli>(m.module_loaded - m.module_load_begin).count(),
               MsSinceStart(m.upload_issued), worker_upload ? "buffers allocated" : "convert + issue",
               std::chrono::duration<double, std::milli>(m.upload_issued - m.upload_begin).count(),
               weight_views.size(), double(upload_bytes) / (1 << 20),
               worker_upload ? "; converted and written on a worker thread" : "",
               m.upload_landed == Clock::time_point{} ? -1.0 : MsSinceStart(m.upload_landed), first_call_ms,
               calls.ids.size(), first_call_ms - double(n - 1) * per_token_ms, n - 1, per_token_ms);
  PrintSpeed(prompt_length, calls.ids.size(), calls.best_seconds, repeat, calls.best_cpu_seconds);
}

// --trace of a run on one process: the calls' dispatches and argument waits, and the upload's
// tensors (LlamaParameters::PendingUpload::spans) on device 0's "uploads" track; says on
// stderr how many dispatches began before the last tensor was written (the upload overlapped
// by compute: hal/README.md, Argument readiness).
Status WriteUploadTrace(const std::string& path, DeviceTrace& trace, LlamaParameters::PendingUpload& upload,
                        const hal::Device& device) {
  HEXIR_RETURN_IF_ERROR(upload.Wait());
  const std::vector<LlamaParameters::PendingUpload::Span>& spans = upload.spans();
  int64_t upload_begin = INT64_MAX, upload_end = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    trace.AddUpload(0, StrCat("weight ", i), spans[i].begin_ns, spans[i].end_ns);
    upload_begin = std::min(upload_begin, spans[i].begin_ns);
    upload_end = std::max(upload_end, spans[i].end_ns);
  }
  size_t dispatches = 0, before_last = 0, waits = 0;
  int64_t first_dispatch = INT64_MAX;
  for (const DeviceTrace::Event& e : trace.events()) {
    if (e.track == DeviceTrace::Track::kArgumentWaits) ++waits;
    if (e.track != DeviceTrace::Track::kDispatches) continue;
    ++dispatches;
    first_dispatch = std::min(first_dispatch, e.begin_ns);
    if (e.begin_ns < upload_end) ++before_last;
  }
  HEXIR_RETURN_IF_ERROR(trace.Write(path));
  const auto ms = [&](int64_t ns) { return ns == INT64_MAX ? -1.0 : double(ns - upload_begin) / 1e6; };
  std::fprintf(stderr,
               "hexir-generate: trace '%s': %zu dispatches, %zu tensors uploaded (from 0 to %.3f ms), %zu argument "
               "waits (%llu counted by the device: host waits on the CPU, waits put on the stream on CUDA); %zu "
               "dispatches began before the last tensor was written (the first at %.3f ms)\n",
               path.c_str(), dispatches, spans.size(), ms(upload_end), waits,
               static_cast<unsigned long long>(device.stats().argument_waits), before_last, ms(first_dispatch));
  return Status::Ok();
}

Status Run(const Flags& f) {
  StartupMarks marks;
  HEXIR_ASSIGN_OR_RETURN(auto parameters, LlamaParameters::Open(f.parameters));
  marks.parameters_mapped = Clock::now();
  const llama::LlamaConfig* config = &parameters->config();
  // The file's own tokenizer, when it has one.
  HEXIR_ASSIGN_OR_RETURN(std::unique_ptr<Vocabulary> vocabulary, FileVocabulary(f, *parameters));
  std::unique_ptr<Tokenizer> tokenizer;
  if (!f.tokenizer.empty()) {
    HEXIR_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::Load(f.tokenizer, config->vocab_size));
    tokenizer = std::make_unique<Tokenizer>(std::move(t));
  }
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> prompt, PromptIds(f, *config, vocabulary.get(), tokenizer.get()));

  if (f.tokenize_only) {
    PrintTokenization(prompt, vocabulary.get());
    return Status::Ok();
  }
  if (f.module.empty()) return InvalidArgument("--module is required (unless --tokenize-only)");

  if (f.verbose) {
    std::string line = "hexir-generate: prompt ids:";
    for (int64_t id : prompt) line += " " + std::to_string(id);
    std::fprintf(stderr, "%s\n", line.c_str());
  }

  InvocationOptions options;
  options.device_uris = f.devices.empty() ? std::vector<std::string>{"cpu"} : f.devices;
  options.cpu_threads = f.cpu_threads;
  const bool greedy = f.sampler.temperature <= 0 && f.sampler.repetition_penalty == 1.0f;
  TextDecoder decode{vocabulary.get(), tokenizer.get(), prompt, config->bos_id};
  marks.module_load_begin = Clock::now();
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<vm::Module> module, vm::Module::LoadFromFile(f.module));
  const size_t device_count = options.device_uris.size();
  if (RunsAsRanks(*module, device_count)) return RunOnRanks(f, *module, options, greedy, prompt, decode);
  if (!f.trace.empty() && runtime::UsesCollectives(*module)) {
    return InvalidArgument("--trace traces a tensor-parallel module run as ranks of this process (--device "
                           "given once per rank); module '", f.module, "' on ", device_count,
                           " device(s) is not one (hexir-run --trace traces any module's calls)");
  }
  if (device_count > std::max<size_t>(1, module->devices().size())) {
    return InvalidArgument("module '", f.module, "' runs on ", std::max<size_t>(1, module->devices().size()),
                           " device(s) and uses no collectives, but --device was given ", device_count,
                           " times (a module from hexir-import --tensor-parallel=N runs one rank per device; one "
                           "placed by --layer-devices or --embedding-device on the devices it lists)");
  }
  HEXIR_ASSIGN_OR_RETURN(auto session, Session::Open(std::move(module), f.module, options));
  marks.module_loaded = Clock::now();
  const DecodeContext target{session->context(), session->devices()};
  const bool streams = !greedy || f.stream;  // through the streaming pair
  HEXIR_ASSIGN_OR_RETURN(const bool prints, SelectRank(f, target, streams, *parameters));
  if (streams && !session->LookupFunction("generate_begin").ok()) {
    return StreamingRefused(f, "placed on devices by hexir-import --embedding-device/--layer-devices, "
                               "or imported before streaming existed");
  }
  HEXIR_ASSIGN_OR_RETURN(vm::Function fn, session->LookupFunction("generate"));
  HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> args, ParseAbiTypes(std::string(fn.attr("abi.args"))));
  HEXIR_ASSIGN_OR_RETURN(const int32_t weight_type,
                         parameters->CheckArguments(args, 2, StrCat("module '", f.module, "': @generate")));
  HEXIR_ASSIGN_OR_RETURN(const int64_t max_tokens,
                         FitToCache(target, f.module, prompt.size(), f.max_tokens, config->seq_len, f.verbose));

  hal::Device& device = session->device();
  int64_t prompt_len = int64_t(prompt.size());
  // The prompt first: on CUDA its write would otherwise queue behind the weights' writes.
  HEXIR_ASSIGN_OR_RETURN(
      auto prompt_view,
      hal::BufferViewFromHost(device, static_cast<int32_t>(hal::ElementType::kI64),
                              Span<const int64_t>(&prompt_len, 1), prompt.data(), prompt.size() * 8));
  // Upload once; the refs are reused by every call (tools/common/llama_parameters.h: writes in
  // layer order on a worker thread; a tensor already in the module's type and layout goes from
  // the mapping as is; others are converted while earlier ones are on the wire, and Hugging
  // Face q/k rows are permuted from rotate-half to interleaved pairs). No host wait and no
  // barrier: each weight's buffer carries its write's timeline value as its readiness
  // (hal::Buffer::SetReadyAfter), so the first call starts at once and its commands wait for
  // exactly the tensors they read (the CPU driver per command on its queue thread, the CUDA
  // driver per command on the GPU, cuda_argument_gate.h: layer 0 computes while later layers
  // convert and upload).
  // A driver that awaits them at the submission (CUDA with HEXIR_CUDA_GATED_ARGUMENTS=0) would
  // hold the first call back until the last write is issued anyway: there the writes are
  // issued first, as before, and one barrier orders the first call after the last.
  const bool per_command = device.AwaitsArgumentsPerCommand();
  // --trace (one process, no ranks): the upload and every call, on the session's devices.
  std::unique_ptr<DeviceTrace> trace;
  if (!f.trace.empty()) {
    std::vector<hal::Device*> devices;
    std::vector<std::string> names;
    for (const vm::Ref<hal::Device>& d : session->devices()) {
      devices.push_back(d.get());
      names.push_back(std::string(d->uri()));
    }
    trace = std::make_unique<DeviceTrace>(std::move(devices), std::move(names));
  }
  marks.upload_begin = Clock::now();
  HEXIR_ASSIGN_OR_RETURN(LlamaParameters::PendingUpload upload,
                         parameters->UploadAsync(device, weight_type,
                                                 per_command ? LlamaParameters::UploadThread::kWorker
                                                             : LlamaParameters::UploadThread::kCaller));
  marks.upload_issued = Clock::now();
  if (!per_command) HEXIR_RETURN_IF_ERROR(OrderAfter(device, upload.ready()));
  // --timing only: a watcher thread notes when the upload landed (it does not delay anything).
  std::thread watcher;
  if (f.timing) {
    watcher = std::thread([&] {
      if (upload.ready().semaphore->Wait(upload.ready().value).ok()) marks.upload_landed = Clock::now();
    });
  }
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join_watcher{watcher};
  const std::vector<vm::Ref<hal::BufferView>>& weight_views = upload.views();

  Calls calls;
  if (streams) {
    HEXIR_RETURN_IF_ERROR(StreamCalls(f, *session, weight_views, prompt, max_tokens, decode, &calls, &marks));
    if (f.stream) return Status::Ok();
  }
  for (int call = 0; greedy && !f.stream && call < std::max(1, f.repeat); ++call) {
    const double cpu_start = ProcessCpuSeconds();
    const auto start = Clock::now();
    HEXIR_RETURN_IF_ERROR(
        CallGenerate(target, fn, prompt_view, max_tokens, weight_views, f.timeout_seconds, &calls.ids));
    calls.Time(start, cpu_start);
    if (call == 0) marks.first_call_done = Clock::now();
  }

  if (trace) HEXIR_RETURN_IF_ERROR(WriteUploadTrace(f.trace, *trace, upload, device));
  if (!prints) return Status::Ok();
  HEXIR_RETURN_IF_ERROR(PrintIds(calls.ids, decode));
  if (f.timing) {
    if (watcher.joinable()) watcher.join();
    PrintStartup(marks, weight_views, per_command, prompt.size(), calls, f.repeat);
  }
  return Status::Ok();
}

}  // namespace
}  // namespace hexir::tools

int main(int argc, char** argv) {
  hexir::tools::g_main_start = hexir::tools::Clock::now();
  hexir::tools::Flags f;
  CLI::App app{"hexir-generate: greedy decoding with a module imported from a llama2.c or GGUF checkpoint"};
  app.add_option("--module", f.module, "compiled module (.vmfb) from hexir-import + hexir-compile (required)");
  app.add_option("--device", f.devices,
                 "cpu (default), cpu:threads=N, cuda, cuda:N; repeated: the devices of a placed module, or one "
                 "rank per device for a tensor-parallel module");
  app.add_option("--parameters", f.parameters, "the llama2.c (.bin) or GGUF (.gguf) checkpoint the module was imported from")->required();
  app.add_option("--tokenizer", f.tokenizer,
                 "llama2.c tokenizer (.bin): decode the ids, encode --prompt (default for GGUF: the file's own)");
  app.add_option("--prompt", f.prompt, "text to continue (needs a tokenizer); default: BOS only");
  app.add_option("--prompt-ids", f.prompt_ids, "prompt as comma-separated token ids (BOS not added)");
  app.add_option("--max-tokens", f.max_tokens, "maximum generated tokens")->required()->check(hexir::tools::IntegerAtLeast(0));
  app.add_option("--cpu-threads", f.cpu_threads, "CPU driver worker threads (0: inline)")
      ->check(hexir::tools::CpuThreads(hexir::hal::kMaxCpuWorkers));
  app.add_option("--repeat", f.repeat, "call @generate N times with the same uploaded weights")
      ->check(hexir::tools::AtLeastOne());
  app.add_option("--timeout", f.timeout_seconds,
                 "seconds each @generate call (with the download of its ids) may take; past it "
                 "the call stops with deadline_exceeded (default: no limit)")
      ->check(hexir::tools::FiniteRange(1e-3, 1e9));
  app.add_flag("--timing", f.timing,
               "print a startup breakdown and the fastest call's time and tokens/s to stderr");
  app.add_flag("--verbose", f.verbose, "print the prompt's token ids (BOS first) to stderr");
  app.add_option("--temperature", f.sampler.temperature,
                 "sampling temperature (default 0: greedy; llama.cpp's default is 0.8)")->check(hexir::tools::FiniteAtLeast(0));
  app.add_option("--top-k", f.sampler.top_k, "keep the k most likely tokens (default 40; <= 0: all)");
  app.add_option("--top-p", f.sampler.top_p, "keep the fewest most likely tokens holding this mass (default 0.95; 1: all)")
      ->check(hexir::tools::FiniteRange(0, 1));
  app.add_option("--min-p", f.sampler.min_p, "keep tokens at least this fraction as likely as the best (default 0.05)")
      ->check(hexir::tools::FiniteRange(0, 1));
  app.add_option("--repetition-penalty", f.sampler.repetition_penalty,
                 "divide positive / multiply negative logits of recent tokens by this (default 1: off)")
      ->check(hexir::tools::FiniteAtLeast(0, /*exclusive=*/true));
  app.add_option("--repeat-last-n", f.sampler.repeat_last_n, "recent tokens the penalty looks at (default 64, at most 64)")
      ->check(hexir::tools::IntegerRange(0, 64));
  app.add_option("--seed", f.seed, "sampling seed: the same seed gives the same text (default: random)")
      ->check(hexir::tools::IntegerAtLeast(0));
  app.add_flag("--stream", f.stream,
               "print the text as each decode chunk ends, then prompt and generation tokens/s to stderr");
  app.add_option("--trace", f.trace,
                 "write a Chrome/Perfetto trace (JSON) of every rank's dispatches and collectives, for a "
                 "tensor-parallel module on --device repeated; stderr says how many collectives overlapped compute");
  app.add_flag("--tokenize-only", f.tokenize_only,
               "print the prompt's ids and their decoded text, and exit (no --module needed)");
  if (int exit = hexir::tools::ParseFlags("hexir-generate", app, argc, argv); exit >= 0) return exit;
  return hexir::tools::RunTool("hexir-generate", [&] { return hexir::tools::Run(f); });
}
