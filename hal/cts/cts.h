// The HAL conformance test suite: written once against hal/api.h, registered per driver.
//
//   // hal/cts/<driver>_cts_test.cc
//   hexir::hal::cts::DriverConfig MyDriver() { return {"mydriver", create_device, kernels}; }
//   HEXIR_HAL_CTS_REGISTER("mydriver", MyDriver)
//
// Each case opens a fresh device through the config. When the driver reports Unavailable,
// the case prints one line "HEXIR_SKIPPED: cts/<driver>/<case>: <reason>" and makes no
// assertion (Catch2 v2 has no skip): a skip is never a pass, count the marker instead.
//
// Kernels: the config's *test executable provider* (`kernels`) returns an executable in the
// driver's own format exporting the CTS kernels, with the semantics in hal/cts/README.md
// (CPU: hal/drivers/cpu/test_kernels.c): add_f32, affine_i32, fail_at.
//
// Features: a driver that lacks a feature lists the case in `unsupported` with a reason; the
// case then prints "HEXIR_SKIPPED: cts/<driver>/<case>: <reason>" instead of running.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "hal/api.h"

namespace hexir::hal::cts {

struct DriverConfig {
  std::string name;
  // Creates a device with the given options (Unavailable -> the case is skipped).
  std::function<StatusOr<vm::Ref<Device>>(const DeviceOptions&)> create_device;
  // The CTS kernels in this driver's executable format, with the given entry points.
  std::function<vm::ExecutableView(std::vector<std::string_view> entry_points)> kernels;
  // Case name ("indirect_dispatch") -> why this driver cannot run it.
  std::map<std::string, std::string> unsupported;
  // A wait on another device's queued work is ordered on the device (CUDA: cuStreamWaitEvent):
  // the dependent work runs even when that producer fails; only its signals carry the failure.
  bool orders_cross_device_waits_on_device = false;
};

using CaseFn = void (*)(const DriverConfig& config, Device& device);

// What every case file needs, failing the case (REQUIRE, the status shown) instead of
// returning an error: an n-byte buffer, a command buffer, a timeline semaphore at `initial`.
vm::Ref<Buffer> Alloc(Device& d, uint64_t n);
vm::Ref<CommandBuffer> NewCb(Device& d);
vm::Ref<Semaphore> NewSem(Device& d, uint64_t initial);

// Runs one case: opens a device, or prints the skip marker and returns.
void RunCase(const DriverConfig& config, const char* case_name, CaseFn fn);

void BuffersCase(const DriverConfig& config, Device& device);
void CopyFillCase(const DriverConfig& config, Device& device);
void DispatchCase(const DriverConfig& config, Device& device);
void ReplayCase(const DriverConfig& config, Device& device);
void SemaphoreOrderingCase(const DriverConfig& config, Device& device);
void TimeoutCase(const DriverConfig& config, Device& device);
void InterruptCase(const DriverConfig& config, Device& device);
void MisuseCase(const DriverConfig& config, Device& device);
void MappingCase(const DriverConfig& config, Device& device);
void ViewsCase(const DriverConfig& config, Device& device);
void IndirectDispatchCase(const DriverConfig& config, Device& device);
void QueueOpsCase(const DriverConfig& config, Device& device);
void PoolCase(const DriverConfig& config, Device& device);
void CrossQueueOrderingCase(const DriverConfig& config, Device& device);
void QueueWaitElisionCase(const DriverConfig& config, Device& device);
// repeat_cases.cc: CommandBuffer::RepeatWhile (device loops).
void RepeatWhileCase(const DriverConfig& config, Device& device);
// transfer_cases.cc: Device::QueueWrite / QueueRead.
void QueueTransfersCase(const DriverConfig& config, Device& device);
void QueueTransferOrderingCase(const DriverConfig& config, Device& device);
void QueueTransferErrorsCase(const DriverConfig& config, Device& device);
// channel_cases.cc: collectives on Device::CreateChannel's channel (any rank count).
void ChannelAllReduceCase(const DriverConfig& config, Device& device);
void ChannelReduceScatterCase(const DriverConfig& config, Device& device);
void ChannelDataMovementCase(const DriverConfig& config, Device& device);
void ChannelReplayCase(const DriverConfig& config, Device& device);
void ChannelMisuseCase(const DriverConfig& config, Device& device);
void ChannelOverlapCase(const DriverConfig& config, Device& device);
void ChannelFailureCase(const DriverConfig& config, Device& device);
void ChannelDeadRankCase(const DriverConfig& config, Device& device);
// The same cases on a group of ranks this process drives, channel i on device i (each case
// above runs them on a group of one: its device's CreateChannel). Devices must queue (not
// inline): every rank's collective is submitted before any is waited for.
struct ChannelGroup {
  std::vector<Device*> devices;
  std::vector<vm::Ref<Channel>> channels;
};
void ChannelAllReduce(const ChannelGroup& group);
void ChannelReduceScatter(const ChannelGroup& group);
void ChannelDataMovement(const ChannelGroup& group);
void ChannelReplay(const ChannelGroup& group);
void ChannelMisuse(const ChannelGroup& group);
// collectives_overlapped follows from the recording and the buffers alone on every driver
// (CUDA: the collective stream and graph branches; CPU: the collective lane), never timing.
void ChannelOverlap(const ChannelGroup& group);

}  // namespace hexir::hal::cts

#define HEXIR_HAL_CTS_CASE_(driver, config_fn, case_name, fn)                           \
  TEST_CASE("cts/" driver "/" case_name) {                                            \
    ::hexir::hal::cts::RunCase(config_fn(), case_name, &::hexir::hal::cts::fn);        \
  }

// Registers every CTS case for one driver; `config_fn` returns its DriverConfig.
#define HEXIR_HAL_CTS_REGISTER(driver, config_fn)                                     \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "buffers", BuffersCase)                      \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "copy_fill", CopyFillCase)                   \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "dispatch", DispatchCase)                    \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "replay", ReplayCase)                        \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "semaphore_ordering", SemaphoreOrderingCase) \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "timeouts", TimeoutCase)                     \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "interrupts", InterruptCase)                  \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "misuse", MisuseCase)                       \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "mapping", MappingCase)                     \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "views", ViewsCase)                         \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "indirect_dispatch", IndirectDispatchCase)  \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "queue_ops", QueueOpsCase)                  \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "pool", PoolCase)                           \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "cross_queue_ordering", CrossQueueOrderingCase) \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "queue_wait_elision", QueueWaitElisionCase)     \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "repeat_while", RepeatWhileCase)                \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "queue_transfers", QueueTransfersCase)          \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "queue_transfer_ordering", QueueTransferOrderingCase) \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "queue_transfer_errors", QueueTransferErrorsCase)    \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "channel_all_reduce", ChannelAllReduceCase)          \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "channel_reduce_scatter", ChannelReduceScatterCase)  \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "channel_data_movement", ChannelDataMovementCase)    \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "channel_replay", ChannelReplayCase)                \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "channel_misuse", ChannelMisuseCase)                \
  HEXIR_HAL_CTS_CASE_(driver, config_fn, "channel_overlap", ChannelOverlapCase)
