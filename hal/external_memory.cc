// Device::WrapExternalMemory's default: host memory someone else owns, on a host-memory
// device (device.h). Drivers with memory of their own (CUDA) override it.
#include <utility>

#include "hal/device.h"

namespace hexir::hal {
namespace {

class ExternalHostBuffer final : public Buffer {
 public:
  ExternalHostBuffer(uint8_t* data, uint64_t byte_size, std::function<void()> release)
      : Buffer(byte_size, kMemoryDeviceLocal | kMemoryHostVisible, nullptr),
        data_(data), release_(std::move(release)) {}
  ~ExternalHostBuffer() override {
    if (release_) release_();
  }
  uint8_t* host_data() const override { return data_; }

 private:
  uint8_t* data_;
  std::function<void()> release_;
};

}  // namespace

StatusOr<vm::Ref<Buffer>> Device::WrapExternalMemory(uint64_t address, uint64_t byte_size,
                                                     std::function<void()> release) {
  if (memory_space().kind != MemorySpace::Kind::kHost) {
    return Unimplemented("device '", uri(), "' cannot use memory it did not allocate");
  }
  if (address == 0 && byte_size > 0) {
    return InvalidArgument("external memory of ", byte_size, " bytes at address 0 for device '",
                           uri(), "'");
  }
  return vm::Ref<Buffer>::Adopt(new ExternalHostBuffer(reinterpret_cast<uint8_t*>(address),
                                                       byte_size, std::move(release)));
}

}  // namespace hexir::hal
