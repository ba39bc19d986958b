#include "tools/common/rank_sessions.h"

#include <string>

namespace hexir::tools {

bool RunsAsRanks(const vm::Module& module, size_t device_count) {
  return device_count > 1 && module.devices().size() <= 1 && runtime::UsesCollectives(module);
}

StatusOr<std::unique_ptr<RankSessions>> RankSessions::Open(const vm::Module& module,
                                                           const std::string& module_path,
                                                           const InvocationOptions& options) {
  HEXIR_ASSIGN_OR_RETURN(std::vector<vm::Ref<hal::Device>> devices, CreateDevices(options));
  std::unique_ptr<RankSessions> s(new RankSessions());
  for (const auto& d : devices) s->devices_.push_back({d});
  StatusOr<std::unique_ptr<runtime::RankGroup>> group = runtime::RankGroup::Create(module, devices);
  if (!group.ok()) return std::move(group).status().WithContext(StrCat("module file '", module_path, "'"));
  s->group_ = std::move(*group);
  return s;
}

std::string ForRank(std::string_view spec, int32_t rank) {
  constexpr std::string_view kRank = "{rank}";
  std::string out;
  for (size_t at = 0; at < spec.size();) {
    size_t found = spec.find(kRank, at);
    if (found == std::string_view::npos) found = spec.size();
    out.append(spec.substr(at, found - at));
    if (found == spec.size()) break;
    out += std::to_string(rank);
    at = found + kRank.size();
  }
  return out;
}

Status RankSessions::CallOnEveryRank(const std::string& function,
                                     const std::vector<std::vector<HostValue>>& inputs,
                                     std::vector<std::vector<HostValue>>* results,
                                     const vm::InvokeOptions& options) {
  if (inputs.size() != 1 && inputs.size() != size_t(size())) {
    return InvalidArgument("function '", function, "': inputs for ", inputs.size(), " ranks given to ", size(),
                           " ranks");
  }
  results->assign(size(), {});
  return group_->Run([&](int32_t rank) -> Status {
    HEXIR_ASSIGN_OR_RETURN(vm::Function fn, group_->context(rank).LookupFunction(function));
    const std::vector<HostValue>& mine = inputs.size() == 1 ? inputs[0] : inputs[rank];
    return CallFunction(group_->context(rank), devices_[rank], fn, mine, &(*results)[rank], options);
  });
}

}  // namespace hexir::tools
