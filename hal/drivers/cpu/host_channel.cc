// CreateHostChannel(s) and CreateInProcessChannels (hal/channel.h): the backend choice.
#include <cstdlib>
#include <cstring>

#include "hal/channel.h"
#include "hal/drivers/cpu/gloo_channel.h"
#include "hal/drivers/cpu/mpi_channel.h"
#include "hal/element_type.h"

namespace hexir::hal {
namespace {

// A group of one: every collective copies its send bytes into its recv bytes (a reduction
// over one rank is the value itself); send/recv have no peer and are refused at record time.
class LocalChannel final : public HostChannel {
 public:
  explicit LocalChannel(std::chrono::nanoseconds timeout) : HostChannel(0, 1, timeout) {}
  std::string_view backend() const override { return "local"; }

  Status Run(const Operation& op) override {
    const CollectiveBytes bytes = CollectiveByteSizes(
        op.kind, op.count, ElementTypeByteSize(op.element_type), 0, 1, op.peer);
    if (op.kind == CollectiveKind::kSend || op.kind == CollectiveKind::kRecv) {
      return InvalidArgument(CollectiveName(op.kind), ": the ", Describe(), " has no peer");
    }
    if (bytes.recv != 0 && op.send != op.recv) std::memmove(op.recv, op.send, bytes.recv);
    return Status::Ok();
  }
};

enum class Backend { kLocal, kMpi, kGloo };

StatusOr<Backend> ChooseBackend() {
  const char* forced = std::getenv("HEXIR_CHANNEL_BACKEND");
  if (forced != nullptr && *forced != '\0') {
    const std::string_view name = forced;
    if (name == "local") return Backend::kLocal;
    if (name == "mpi") return Backend::kMpi;
    if (name == "gloo") return Backend::kGloo;
    return InvalidArgument("HEXIR_CHANNEL_BACKEND='", name, "' is not a channel backend "
                           "(local, mpi, gloo)");
  }
  if (cpu::LaunchedByMpirun()) return Backend::kMpi;
  if (cpu::LaunchedByTorchrun()) return Backend::kGloo;
  return Backend::kLocal;
}

}  // namespace

StatusOr<std::vector<vm::Ref<HostChannel>>> CreateHostChannels(int32_t local_count) {
  if (local_count < 1) return InvalidArgument("host channels: ", local_count, " devices given");
  const auto timeout = DefaultCollectiveTimeout();
  HEXIR_ASSIGN_OR_RETURN(Backend backend, ChooseBackend());
  switch (backend) {
    case Backend::kMpi: {
      if (local_count != 1) {
        return Unimplemented("mpi channels give one rank per process: ", local_count,
                             " devices in one process need HEXIR_CHANNEL_BACKEND=gloo under a "
                             "torchrun-style launch, or one device per mpirun rank");
      }
      HEXIR_ASSIGN_OR_RETURN(vm::Ref<HostChannel> channel, cpu::CreateMpiChannel(timeout));
      return std::vector<vm::Ref<HostChannel>>{std::move(channel)};
    }
    case Backend::kGloo: {
      if (!cpu::LaunchedByTorchrun()) return cpu::CreateGlooChannels(nullptr, local_count, timeout);
      HEXIR_ASSIGN_OR_RETURN(cpu::LaunchEnvironment launch, cpu::ReadLaunchEnvironment());
      return cpu::CreateGlooChannels(&launch, local_count, timeout);
    }
    case Backend::kLocal:
      if (local_count > 1) return cpu::CreateGlooChannels(nullptr, local_count, timeout);
      return std::vector<vm::Ref<HostChannel>>{
          vm::Ref<HostChannel>(vm::MakeRef<LocalChannel>(timeout))};
  }
  return Internal("host channels: unknown backend");
}

StatusOr<vm::Ref<HostChannel>> CreateHostChannel() {
  HEXIR_ASSIGN_OR_RETURN(std::vector<vm::Ref<HostChannel>> channels, CreateHostChannels(1));
  return std::move(channels[0]);
}

StatusOr<std::vector<vm::Ref<HostChannel>>> CreateInProcessChannels(int32_t count) {
  return cpu::CreateGlooChannels(nullptr, count, DefaultCollectiveTimeout());
}

}  // namespace hexir::hal
