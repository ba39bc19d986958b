// The CTS on the CPU driver (default options: a queue thread and hardware_concurrency workers),
// plus an inline single-threaded variant.
#include "hal/cts/cts.h"
#include "hal/drivers/cpu/testing/test_kernels.h"

namespace {

hexir::hal::cts::DriverConfig CpuConfig() {
  return {"cpu",
          [](const hexir::hal::DeviceOptions& o) { return hexir::hal::CreateDevice("cpu", o); },
          [](std::vector<std::string_view> e) {
            return hexir::hal::cpu::testing::TestKernelView(std::move(e));
          }};
}

// Inline mode executes at submission, so a submission cannot wait for a later host signal:
// the ordering and timeout cases (which do exactly that) are registered for the queued device.
hexir::hal::cts::DriverConfig CpuInlineConfig() {
  auto c = CpuConfig();
  c.name = "cpu-inline";
  c.create_device = [](const hexir::hal::DeviceOptions&) {
    hexir::hal::DeviceOptions o;
    o.cpu_inline = true;
    o.cpu_worker_count = 1;
    return hexir::hal::CreateDevice("cpu", o);
  };
  return c;
}

}  // namespace

HEXIR_HAL_CTS_REGISTER("cpu", CpuConfig)
// Break their channel on purpose, channel_dead_rank by ending a rank's process (both skip
// unless 2+ ranks run under mpirun or torchrun-style): each run alone by hal/cts/mpi_cts_test.sh
// and torchrun_cts_test.sh.
HEXIR_HAL_CTS_CASE_("cpu", CpuConfig, "channel_failure", ChannelFailureCase)
HEXIR_HAL_CTS_CASE_("cpu", CpuConfig, "channel_dead_rank", ChannelDeadRankCase)

HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "buffers", BuffersCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "copy_fill", CopyFillCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "dispatch", DispatchCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "replay", ReplayCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "mapping", MappingCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "views", ViewsCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "indirect_dispatch", IndirectDispatchCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "queue_ops", QueueOpsCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "repeat_while", RepeatWhileCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "pool", PoolCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "queue_transfers", QueueTransfersCase)
HEXIR_HAL_CTS_CASE_("cpu-inline", CpuInlineConfig, "queue_transfer_errors", QueueTransferErrorsCase)
