#include "hal/buffer_view.h"

#include "hal/element_type.h"

namespace hexir::hal {

std::string FormatShape(Span<const int64_t> dims, int64_t element_type) {
  std::string s;
  for (int64_t d : dims) {
    s += d < 0 ? std::string("?") : std::to_string(d);
    s += "x";
  }
  std::string_view name = ElementTypeName(element_type);
  if (name.empty()) {
    s += "type<" + std::to_string(element_type) + ">";
  } else {
    s += std::string(name);
  }
  return s;
}

StatusOr<uint64_t> ComputeByteSize(Span<const int64_t> dims, int64_t element_type,
                                   int64_t* element_count) {
  int64_t elem = ElementTypeByteSize(element_type);
  if (elem == 0) return InvalidArgument("unknown element type code ", element_type);
  // Bounded well below 2^63 so that the multiplications below cannot overflow.
  constexpr uint64_t kLimit = uint64_t{1} << 48;
  uint64_t count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return InvalidArgument("dim ", i, " of ", FormatShape(dims, element_type),
                             " is negative (", dims[i], ")");
    }
    if (dims[i] != 0 && count > kLimit / static_cast<uint64_t>(dims[i])) {
      return InvalidArgument("shape ", FormatShape(dims, element_type), " is too large");
    }
    count *= static_cast<uint64_t>(dims[i]);
  }
  if (count > kLimit) return InvalidArgument("shape ", FormatShape(dims, element_type), " is too large");
  if (element_count) *element_count = static_cast<int64_t>(count);
  return count * static_cast<uint64_t>(elem);
}

BufferView::BufferView(vm::Ref<Buffer> buffer, int32_t element_type, std::vector<int64_t> dims,
                       int64_t element_count, uint64_t byte_size)
    : buffer_(std::move(buffer)),
      element_type_(element_type),
      dims_(std::move(dims)),
      element_count_(element_count),
      byte_size_(byte_size) {}

StatusOr<vm::Ref<BufferView>> BufferView::Create(vm::Ref<Buffer> buffer, int32_t element_type,
                                                 std::vector<int64_t> dims) {
  if (!buffer) return InvalidArgument("buffer view: buffer is null");
  int64_t count = 0;
  HEXIR_ASSIGN_OR_RETURN(uint64_t bytes, ComputeByteSize(dims, element_type, &count));
  if (bytes > buffer->byte_size()) {
    return InvalidArgument("buffer view ", FormatShape(dims, element_type), " needs ", bytes,
                           " bytes but the buffer holds ", buffer->byte_size());
  }
  return vm::Ref<BufferView>::Adopt(
      new BufferView(std::move(buffer), element_type, std::move(dims), count, bytes));
}

std::string BufferView::ShapeString() const { return FormatShape(dims_, element_type_); }

}  // namespace hexir::hal
