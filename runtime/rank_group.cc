#include "runtime/rank_group.h"

#include <mutex>
#include <thread>

#include "hal/module/hal_module.h"

namespace hexir::runtime {

bool UsesCollectives(const vm::Module& module) {
  for (const vm::ImportInfo& import : module.imports())
    if (import.name == "hal.channel.default") return true;
  return false;
}

StatusOr<std::unique_ptr<RankGroup>> RankGroup::Create(const vm::Module& module,
                                                       std::vector<vm::Ref<hal::Device>> devices) {
  if (devices.empty()) return InvalidArgument("module '", module.name(), "': a rank group needs at least one device");
  if (module.devices().size() > 1) {
    return InvalidArgument("module '", module.name(), "' runs on ", module.devices().size(),
                           " devices; a rank group runs a module of one device on each rank");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    HEXIR_RETURN_IF_ERROR(
        hal::CheckModuleDevices(module, {devices[i]}).WithContext(StrCat("rank ", i)));
  }
  std::vector<vm::Ref<hal::Channel>> channels;
  if (devices.size() == 1) {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<hal::Channel> channel, devices[0]->CreateChannel());
    channels.push_back(std::move(channel));
  } else {
    std::vector<hal::Device*> group;
    for (const auto& d : devices) group.push_back(d.get());
    StatusOr<std::vector<vm::Ref<hal::Channel>>> made = devices[0]->CreateGroupChannels(group);
    if (!made.ok()) {
      return std::move(made).status().WithContext(
          StrCat("module '", module.name(), "': the channels of ", devices.size(), " ranks"));
    }
    channels = std::move(*made);
  }
  std::unique_ptr<RankGroup> group(new RankGroup());
  for (size_t i = 0; i < devices.size(); ++i) {
    Rank rank;
    rank.device = devices[i];
    rank.channel = channels[i];
    rank.context = vm::Context::Create();
    HEXIR_RETURN_IF_ERROR(rank.context->RegisterNativeModule(
        hal::CreateHalModule({rank.device}, {rank.channel})));
    Status st = rank.context->LoadModule(module);
    if (!st.ok()) return std::move(st).WithContext(StrCat("module '", module.name(), "' on rank ", i));
    group->ranks_.push_back(std::move(rank));
  }
  return group;
}

Status RankGroup::Run(const std::function<Status(int32_t rank)>& body,
                      std::vector<Status>* statuses) {
  const int32_t n = size();
  std::vector<Status> results(n);
  std::mutex mu;
  int32_t first_failed = -1;
  auto run_rank = [&](int32_t r) {
    Status st = body(r);
    if (!st.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (first_failed < 0) first_failed = r;
      }
      // Peers may wait in a collective this rank will never issue: let this rank's own queued
      // collectives end (or time out), then tell the peers.
      (void)ranks_[r].device->WaitIdle(ranks_[r].channel->timeout() * 2);
      ranks_[r].channel->Abandon(st);
    }
    results[r] = std::move(st);
  };
  if (n == 1) {
    run_rank(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (int32_t r = 0; r < n; ++r) threads.emplace_back(run_rank, r);
    for (std::thread& t : threads) t.join();
  }
  if (statuses) *statuses = results;
  if (first_failed < 0) return Status::Ok();
  const Status& st = results[first_failed];
  return Status(st.code(), StrCat("rank ", first_failed, " of ", n, " ('",
                                  ranks_[first_failed].device->uri(), "'): ", st.message()));
}

}  // namespace hexir::runtime
