// CreateHostChannel (hal/channel.h): MPI under mpirun, else a local channel of one rank.
#include <cstring>

#include "hal/channel.h"
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

}  // namespace

StatusOr<vm::Ref<HostChannel>> CreateHostChannel() {
  const auto timeout = DefaultCollectiveTimeout();
  if (cpu::LaunchedByMpirun()) return cpu::CreateMpiChannel(timeout);
  return vm::Ref<HostChannel>(vm::MakeRef<LocalChannel>(timeout));
}

}  // namespace hexir::hal
