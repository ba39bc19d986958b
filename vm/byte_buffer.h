// vm.buffer: an immutable byte range held in a ref register (rodata segments).
//
// Ownership: the bytes belong to `owner` (for rodata, the loaded module's storage), which the
// ByteBuffer retains, so the range stays valid as long as the ByteBuffer lives.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vm/ref.h"

namespace hexir::vm {

class ByteBuffer final : public RefObject {
  HEXIR_REF_TYPE(ByteBuffer, "vm.buffer")
 public:
  ByteBuffer(const uint8_t* data, size_t size, Ref<RefObject> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  Ref<RefObject> owner_;
};

}  // namespace hexir::vm
