#include "tools/hexir-generate/rank_generate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "hal/element_type.h"
#include "tools/common/device_trace.h"
#include "tools/common/llama_parameters.h"
#include "tools/common/rank_sessions.h"
#include "tools/hexir-generate/decode_calls.h"

namespace hexir::tools {
namespace {

// One rank's weights, prompt and ids.
struct RankState {
  std::unique_ptr<LlamaParameters> parameters;
  LlamaParameters::PendingUpload upload;
  vm::Ref<hal::BufferView> prompt;
  vm::Function generate;
  int64_t max_tokens = 0;
  std::vector<int64_t> ids;
};

// Everything before the first collective, on one rank: checks and the upload of its part.
Status PrepareRank(DecodeContext target, int32_t rank, int32_t rank_count,
                   const RankGenerateRequest& request, RankState* state) {
  const std::string& path = request.module_path;
  HEXIR_ASSIGN_OR_RETURN(std::optional<TensorParallelRank> tp, QueryTensorParallel(target, path));
  if (!tp) {
    return InvalidArgument("module '", path, "' uses collectives but has no @tensor_parallel: ",
                           rank_count, " devices run a module from hexir-import --tensor-parallel=N");
  }
  if (tp->count != tp->ranks) {
    return InvalidArgument("module '", path, "' is tensor-parallel over ", tp->ranks, " ranks but runs on ",
                           tp->count, " (start it with mpirun -n ", tp->ranks, ", or give --device ",
                           tp->ranks, " times)");
  }
  HEXIR_ASSIGN_OR_RETURN(state->parameters, LlamaParameters::Open(request.parameters_path));
  HEXIR_RETURN_IF_ERROR(state->parameters->SelectTensorParallelRank(tp->ranks, tp->rank));
  HEXIR_ASSIGN_OR_RETURN(state->generate, target.context.LookupFunction("generate"));
  HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> args, ParseAbiTypes(std::string(state->generate.attr("abi.args"))));
  HEXIR_ASSIGN_OR_RETURN(const int32_t weight_type,
                         state->parameters->CheckArguments(args, 2, StrCat("module '", path, "': @generate")));
  HEXIR_ASSIGN_OR_RETURN(state->max_tokens,
                         FitToCache(target, path, request.prompt.size(), request.max_tokens,
                                    state->parameters->config().seq_len, request.verbose && rank == 0));
  hal::Device& device = *target.devices[0];
  HEXIR_ASSIGN_OR_RETURN(state->upload, state->parameters->UploadAsync(device, weight_type));
  HEXIR_RETURN_IF_ERROR(OrderAfter(device, state->upload.ready()));
  const int64_t prompt_length = int64_t(request.prompt.size());
  HEXIR_ASSIGN_OR_RETURN(state->prompt, hal::BufferViewFromHost(device, static_cast<int32_t>(hal::ElementType::kI64),
                                                                Span<const int64_t>(&prompt_length, 1),
                                                                request.prompt.data(), request.prompt.size() * 8));
  if (request.verbose) {
    std::fprintf(stderr, "hexir-generate: tensor-parallel rank %d of %d on '%s'\n", rank, rank_count,
                 std::string(device.uri()).c_str());
  }
  return Status::Ok();
}

// The --repeat calls of @generate on every rank at once; the ids must agree.
Status CallRanks(RankSessions& ranks, const RankGenerateRequest& request, std::vector<RankState>& states,
                 RankGenerateResult* result) {
  const int32_t n = ranks.size();
  result->best_seconds = 1e30;
  for (int call = 0; call < std::max(1, request.repeat); ++call) {
    const auto start = std::chrono::steady_clock::now();
    HEXIR_RETURN_IF_ERROR(ranks.group().Run([&](int32_t r) {
      RankState& s = states[r];
      return CallGenerate({ranks.group().context(r), ranks.devices(r)}, s.generate, s.prompt, s.max_tokens,
                          s.upload.views(), request.timeout_seconds, &s.ids);
    }));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result->best_seconds = std::min(result->best_seconds, seconds);
    for (int32_t r = 1; r < n; ++r) {
      if (states[r].ids != states[0].ids) {
        return Internal("module '", request.module_path, "': rank ", r, " generated ", states[r].ids.size(),
                        " ids that differ from rank 0's ", states[0].ids.size(),
                        " (every rank of a tensor-parallel module computes the same ids)");
      }
    }
  }
  result->ids = states[0].ids;
  return Status::Ok();
}

}  // namespace

Status GenerateOnRanks(const vm::Module& module, const InvocationOptions& options,
                       const RankGenerateRequest& request, RankGenerateResult* result) {
  HEXIR_ASSIGN_OR_RETURN(auto ranks, RankSessions::Open(module, request.module_path, options));
  const int32_t n = ranks->size();
  std::vector<RankState> states(n);
  // No collective before @generate: the ranks are prepared one after the other, and a
  // refusal (a rank count the module was not imported for) comes before any upload.
  for (int32_t r = 0; r < n; ++r) {
    Status st = PrepareRank({ranks->group().context(r), ranks->devices(r)}, r, n, request, &states[r]);
    if (!st.ok()) return std::move(st).WithContext(StrCat("rank ", r, " of ", n));
  }
  std::vector<hal::Device*> traced;
  std::vector<std::string> names;
  for (int32_t r = 0; r < n; ++r) {
    traced.push_back(ranks->devices(r)[0].get());
    names.push_back(StrCat("rank ", r, " (", options.device_uris[r], ")"));
  }
  return TraceCalls("hexir-generate", request.trace, traced, names,
                    [&] { return CallRanks(*ranks, request, states, result); });
}

}  // namespace hexir::tools
