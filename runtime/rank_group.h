// RankGroup: one process driving N devices, each the rank of one SPMD module.
//
// A module that exchanges data by collectives (hexir.all_reduce ..., hexir-import
// --tensor-parallel=N) is one program run by every rank. Started by mpirun or a torchrun-style
// launch, each process is one rank (hal/channel.h). A RankGroup instead runs N ranks in this
// process: rank i is devices[i] with its own VM context, whose "hal" module answers
// hal.channel.default with channel i of one group made for the N devices
// (Device::CreateGroupChannels: an in-process Gloo group for CPU devices, NCCL communicators
// for CUDA devices; under a torchrun-style launch ranks RANK*N+i of WORLD_SIZE*N).
//
//   HEXIR_ASSIGN_OR_RETURN(auto group, runtime::RankGroup::Create(*module, devices));
//   HEXIR_RETURN_IF_ERROR(group->Run([&](int32_t rank) -> Status {
//     ... group->context(rank).Invoke(...) with rank's own arguments ...
//   }));
//
// Failures: Run calls the body of every rank at once, each on its own thread (collectives
// block until every rank issued them). When one rank's body fails, its queue is drained and
// its channel abandoned (Channel::Abandon), so peers blocked in a collective with it fail at
// once (Gloo; elsewhere when the collective timeout, HEXIR_COLLECTIVE_TIMEOUT, passes) rather
// than hang; Run then returns the first failure with its rank named:
// "rank 1 of 2 ('cpu'): function 'main' @4: ...".
//
// Ownership: the group retains its devices and channels and owns the contexts (the module is
// retained by each context). Thread-safety: Run is called by one thread at a time; a rank's
// context is used only by its body while Run runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "hal/channel.h"
#include "hal/device.h"
#include "vm/api.h"
#include "vm/module.h"

namespace hexir::runtime {

// True when `module` imports hal.channel.default: an SPMD program run by a group of ranks.
bool UsesCollectives(const vm::Module& module);

class RankGroup {
 public:
  // One rank per device (at least one). Each device must suit the module
  // (hal::CheckModuleDevices; a module listing several devices is refused: its ranks would
  // need a device group each). Blocks until every rank's channel joined the group.
  static StatusOr<std::unique_ptr<RankGroup>> Create(const vm::Module& module,
                                                     std::vector<vm::Ref<hal::Device>> devices);

  int32_t size() const { return int32_t(ranks_.size()); }
  hal::Device& device(int32_t rank) { return *ranks_[rank].device; }
  hal::Channel& channel(int32_t rank) { return *ranks_[rank].channel; }
  vm::Context& context(int32_t rank) { return *ranks_[rank].context; }

  // Runs body(rank) for every rank at once, one thread each, and waits for all. Ok when every
  // body succeeded; else the first failure (in time) as "rank R of N ('uri'): <message>"
  // with its code. `statuses`, when given, receives each rank's own status.
  Status Run(const std::function<Status(int32_t rank)>& body,
             std::vector<Status>* statuses = nullptr);

 private:
  struct Rank {
    vm::Ref<hal::Device> device;
    vm::Ref<hal::Channel> channel;
    std::unique_ptr<vm::Context> context;
  };
  RankGroup() = default;
  std::vector<Rank> ranks_;
};

}  // namespace hexir::runtime
