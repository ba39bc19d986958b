// hal.buffer_view: a buffer interpreted as a dense row-major tensor (element type + dims).
//
// Invariants (checked by Create): the element type is a known hal/element_type.h code, every
// dim is >= 0, and the buffer holds at least product(dims) * element size bytes from offset 0.
// Ownership: refcounted; retains its buffer. Immutable, so thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/span.h"
#include "base/status.h"
#include "hal/buffer.h"
#include "vm/ref.h"

namespace hexir::hal {

class BufferView final : public vm::RefObject {
  HEXIR_REF_TYPE(BufferView, "hal.buffer_view")
 public:
  static StatusOr<vm::Ref<BufferView>> Create(vm::Ref<Buffer> buffer, int32_t element_type,
                                              std::vector<int64_t> dims);

  Buffer& buffer() const { return *buffer_; }
  const vm::Ref<Buffer>& buffer_ref() const { return buffer_; }
  int32_t element_type() const { return element_type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t element_count() const { return element_count_; }
  // element_count() * element size: the bytes the view covers (<= buffer().byte_size()).
  uint64_t byte_size() const { return byte_size_; }
  // "2x3xf32"; "f32" for rank 0.
  std::string ShapeString() const;

 private:
  BufferView(vm::Ref<Buffer> buffer, int32_t element_type, std::vector<int64_t> dims,
             int64_t element_count, uint64_t byte_size);
  vm::Ref<Buffer> buffer_;
  int32_t element_type_;
  std::vector<int64_t> dims_;
  int64_t element_count_;
  uint64_t byte_size_;
};

// "2x3xf32" for dims {2,3} and f32; -1 dims print as "?"; unknown types print as "type<N>".
std::string FormatShape(Span<const int64_t> dims, int64_t element_type);

// product(dims) * element size with overflow and sign checks; `what` names the thing in errors.
StatusOr<uint64_t> ComputeByteSize(Span<const int64_t> dims, int64_t element_type,
                                   int64_t* element_count = nullptr);

}  // namespace hexir::hal
