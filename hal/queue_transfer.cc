#include "hal/queue_transfer.h"

#include "hal/queue_submission.h"

namespace hexir::hal {
namespace {

class BorrowedHostBuffer final : public Buffer {
 public:
  BorrowedHostBuffer(void* host, uint64_t size)
      : Buffer(size, kMemoryHostVisible, nullptr), host_(static_cast<uint8_t*>(host)) {}
  uint8_t* host_data() const override { return host_; }

 private:
  uint8_t* host_;
};

}  // namespace

std::string TransferRangeText(const Buffer& buffer, uint64_t offset, uint64_t size) {
  return StrCat("bytes [", offset, ", ", offset + size, ") of a ", buffer.byte_size(),
                "-byte buffer");
}

Status CheckQueueTransfer(const char* op, const std::vector<SemaphoreValue>& waits,
                          const std::vector<SemaphoreValue>& signals, const void* host,
                          uint64_t size, const Buffer* buffer, uint64_t offset) {
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores(op, waits, signals));
  if (!buffer) return InvalidArgument(op, ": buffer is null");
  if (host == nullptr && size != 0)
    return InvalidArgument(op, ": host pointer is null for ", TransferRangeText(*buffer, offset, size));
  // offset + size may wrap: compare against what is left after the offset.
  if (offset > buffer->byte_size() || size > buffer->byte_size() - offset) {
    const bool wraps = offset + size < offset;
    return OutOfRange(op, ": bytes [", offset, ", ",
                      wraps ? StrCat(offset, " + ", size) : StrCat(offset + size),
                      ") run past the end of a ", buffer->byte_size(), "-byte buffer");
  }
  return Status::Ok();
}

vm::Ref<Buffer> BorrowHostMemory(void* host, uint64_t size) {
  return vm::Ref<Buffer>::Adopt(new BorrowedHostBuffer(host, size));
}

}  // namespace hexir::hal
