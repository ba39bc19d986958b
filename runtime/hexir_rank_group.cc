// hexir_rank_group_* (runtime/hexir_runtime.h) over runtime::RankGroup: every rank is called
// on its own thread with its own arguments; rank 0's results go back to the caller.
#include <string>
#include <utility>
#include <vector>

#include "runtime/c_api_handles.h"
#include "runtime/hexir_runtime.h"
#include "runtime/rank_group.h"

struct hexir_rank_group {
  std::unique_ptr<hexir::runtime::RankGroup> group;  // retains the devices; its contexts the module
};

namespace {

using hexir::StatusCode;
using hexir::runtime::c_api::Fail;

}  // namespace

extern "C" {

hexir_status_t hexir_rank_group_create(hexir_instance_t* instance, hexir_module_t* module,
                                       hexir_device_t* const* devices, size_t count,
                                       hexir_rank_group_t** out_group) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(instance);
  HEXIR_C_NONNULL(module);
  HEXIR_C_REQUIRE(devices || count == 0, "null devices with count > 0");
  HEXIR_C_NONNULL(out_group);
  const hexir::vm::Module& m = *module->module;
  if (count == 0)
    return Fail(StatusCode::kInvalidArgument, "module '", m.name(), "': a rank group needs at least one device, got 0");
  if (!hexir::runtime::UsesCollectives(m))
    return Fail(StatusCode::kInvalidArgument, "module '", m.name(),
                "' uses no collectives (it imports no hal.channel.default), so it is not a program for a group "
                "of ranks; run it on one context (hexir_context_create)");
  std::vector<hexir::vm::Ref<hexir::hal::Device>> ranks;
  for (size_t i = 0; i < count; ++i) {
    if (!devices[i]) return Fail(StatusCode::kInvalidArgument, "module '", m.name(), "': device ", i, " is null");
    ranks.push_back(devices[i]->device);
  }
  auto group = hexir::runtime::RankGroup::Create(m, std::move(ranks));
  if (!group.ok()) return Fail(group.status());
  *out_group = new hexir_rank_group{std::move(*group)};
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

size_t hexir_rank_group_size(const hexir_rank_group_t* group) {
  return group ? size_t(group->group->size()) : 0;
}

hexir_status_t hexir_rank_group_call(hexir_rank_group_t* group, const char* function,
                                     const hexir_values_t* const* rank_args,
                                     hexir_values_t* results, int64_t deadline_ns) {
  HEXIR_C_GUARD_BEGIN
  HEXIR_C_NONNULL(group);
  HEXIR_C_NONNULL(function);
  HEXIR_C_NONNULL(rank_args);
  HEXIR_C_NONNULL(results);
  hexir::runtime::RankGroup& ranks = *group->group;
  const int32_t n = ranks.size();
  // Everything checkable is checked before any rank runs: a refusal then involves no peer.
  std::vector<hexir::vm::Function> fns;
  std::vector<std::vector<hexir::vm::Variant>> ins(n);
  for (int32_t r = 0; r < n; ++r) {
    auto fn = ranks.context(r).LookupFunction(function);
    if (!fn.ok()) return Fail(fn.status());
    if (!rank_args[r]) return Fail(StatusCode::kInvalidArgument, "rank ", r, " of ", n, ": its argument list is null");
    if (hexir_status_t bad = hexir::runtime::c_api::CheckArgumentKinds(*fn, *rank_args[r])) {
      hexir::runtime::c_api::last_error = hexir::StrCat("rank ", r, " of ", n, ": ", hexir::runtime::c_api::last_error);
      return bad;
    }
    ins[r] = rank_args[r]->values;  // Invoke never consumes arguments; the copy keeps them const
    fns.push_back(std::move(*fn));
  }
  std::vector<std::vector<hexir::vm::Variant>> outs(n);
  hexir::vm::InvokeOptions options;
  options.deadline_ns = deadline_ns;
  hexir::Status st = ranks.Run([&](int32_t r) {
    return ranks.context(r).Invoke(fns[r], hexir::Span<hexir::vm::Variant>(ins[r].data(), ins[r].size()), &outs[r],
                                   options);
  });
  if (!st.ok()) return Fail(st);
  const std::string& sig = fns[0].signature;
  const size_t us = sig.find('_');
  results->kinds.assign(us == std::string::npos ? sig.end() : sig.begin() + us + 1, sig.end());
  results->values = std::move(outs[0]);
  results->values.resize(results->kinds.size());
  return HEXIR_OK;
  HEXIR_C_GUARD_END
}

void hexir_rank_group_release(hexir_rank_group_t* group) { delete group; }

}  // extern "C"
