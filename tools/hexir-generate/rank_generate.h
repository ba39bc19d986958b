// hexir-generate with --device repeated and a tensor-parallel module (hexir-import
// --tensor-parallel=N): N ranks in this process, one per device (tools/common/rank_sessions.h:
// a VM context each, channels of one in-process group). Each rank maps the checkpoint,
// checks @tensor_parallel (N must equal the number of devices: refused by name before any
// upload), uploads only its part of the weights (LlamaParameters::SelectTensorParallelRank),
// then every rank calls @generate at once; the ids are rank 0's (every rank computes the same
// ids: a rank that does not is an Internal error naming it).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tools/common/invocation.h"
#include "vm/module.h"

namespace hexir::tools {

struct RankGenerateRequest {
  std::string module_path;
  std::string parameters_path;
  std::vector<int64_t> prompt;
  int64_t max_tokens = 0;
  int repeat = 1;
  double timeout_seconds = 0;  // each call with its id download; 0: none
  bool verbose = false;
  std::string trace;  // --trace: the calls' dispatches and collectives per rank (TraceCalls)
};

struct RankGenerateResult {
  std::vector<int64_t> ids;   // rank 0's, from the last call
  double best_seconds = 0;    // the fastest call (every rank's call and download)
};

Status GenerateOnRanks(const vm::Module& module, const InvocationOptions& options,
                       const RankGenerateRequest& request, RankGenerateResult* result);

}  // namespace hexir::tools
