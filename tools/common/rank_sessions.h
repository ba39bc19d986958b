// Several --device flags for a module of one device that uses collectives (a tensor-parallel
// llama, any SPMD program): each device is one rank of the program in this process
// (runtime/rank_group.h: one VM context and one channel of an in-process group per rank).
// What hexir-run and hexir-generate share.
//
// Ownership: RankSessions owns the group (devices, channels, contexts). Thread-safety: one
// call at a time; CallOnEveryRank runs the ranks on threads of its own.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/rank_group.h"
#include "tools/common/invocation.h"

namespace hexir::tools {

// True when `device_count` devices given to `module` make that many ranks: more than one
// device, a module of at most one device that imports hal.channel.default. (A module listing
// several devices binds them all in one context instead: Session.)
bool RunsAsRanks(const vm::Module& module, size_t device_count);

// `spec` with every "{rank}" replaced by `rank` (per-rank files of a command line: the shards
// of a partitioned program's arguments and results, as tests/partition/run_rank.sh does for
// mpirun).
std::string ForRank(std::string_view spec, int32_t rank);

class RankSessions {
 public:
  // The devices of `options` (one rank each), a group of their channels, the module loaded
  // in every rank's context. Errors name the module file and the rank.
  static StatusOr<std::unique_ptr<RankSessions>> Open(const vm::Module& module,
                                                       const std::string& module_path,
                                                       const InvocationOptions& options);

  int32_t size() const { return group_->size(); }
  runtime::RankGroup& group() { return *group_; }
  // Rank r's device, as the device list CallFunction takes.
  const std::vector<vm::Ref<hal::Device>>& devices(int32_t rank) const { return devices_[rank]; }

  // Calls `function` on every rank at once, rank r with inputs[r] (one list for every rank
  // when `inputs` holds one); (*results)[r] is rank r's. A failure is the group's
  // (RankGroup::Run: the first failing rank named).
  Status CallOnEveryRank(const std::string& function, const std::vector<std::vector<HostValue>>& inputs,
                         std::vector<std::vector<HostValue>>* results,
                         const vm::InvokeOptions& options = {});

 private:
  RankSessions() = default;
  std::unique_ptr<runtime::RankGroup> group_;
  std::vector<std::vector<vm::Ref<hal::Device>>> devices_;  // by rank: {its device}
};

}  // namespace hexir::tools
