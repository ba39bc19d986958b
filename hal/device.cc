#include "hal/device.h"

namespace hexir::hal {

StatusOr<vm::Ref<CommandBuffer>> Device::CreateCommandBuffer() {
  return vm::MakeRef<CommandBuffer>(counters_);
}

StatusOr<vm::Ref<Semaphore>> Device::CreateSemaphore(uint64_t initial_value) {
  return vm::MakeRef<Semaphore>(initial_value, counters_);
}

}  // namespace hexir::hal
