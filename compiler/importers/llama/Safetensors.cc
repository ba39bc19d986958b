#include "compiler/importers/llama/Safetensors.h"

#include <cstring>
#include <string_view>

#include "compiler/importers/llama/Json.h"

namespace hexir::compiler::llama {

StatusOr<SafetensorsFile> ParseSafetensors(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 8) return InvalidArgument("safetensors '", name, "': ", size, " bytes, shorter than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, data, 8);
  if (n > size - 8)
    return InvalidArgument("safetensors '", name, "': header length ", n, " runs past the end of the file (",
                           size - 8, " bytes follow the length)");
  StatusOr<JsonValue> header = ParseJson(std::string_view(reinterpret_cast<const char*>(data) + 8, size_t(n)));
  if (!header.ok()) return std::move(header).status().WithContext(StrCat("safetensors '", name, "' header"));
  if (header->kind != JsonValue::Kind::kObject)
    return InvalidArgument("safetensors '", name, "': the header is a JSON ", header->KindName(), ", not an object");
  const uint64_t data_start = 8 + n, data_bytes = size - data_start;
  SafetensorsFile f;
  for (const auto& [tensor, info] : header->members) {
    if (tensor == "__metadata__") continue;
    std::string what = StrCat("safetensors '", name, "': tensor '", tensor, "'");
    const JsonValue* dtype = info.Find("dtype");
    const JsonValue* shape = info.Find("shape");
    const JsonValue* offsets = info.Find("data_offsets");
    if (info.kind != JsonValue::Kind::kObject || !dtype || dtype->kind != JsonValue::Kind::kString || !shape ||
        shape->kind != JsonValue::Kind::kArray || !offsets || offsets->kind != JsonValue::Kind::kArray ||
        offsets->items.size() != 2)
      return InvalidArgument(what, " needs \"dtype\" (string), \"shape\" (array) and \"data_offsets\" ([begin, end])");
    SafetensorsTensor t;
    int64_t elem;
    if (dtype->string == "F32") t.type = hal::ElementType::kF32, elem = 4;
    else if (dtype->string == "F16") t.type = hal::ElementType::kF16, elem = 2;
    else if (dtype->string == "BF16") t.type = hal::ElementType::kBF16, elem = 2;
    else return InvalidArgument(what, " has dtype ", dtype->string, "; only F32, F16 and BF16 are supported");
    uint64_t bytes = uint64_t(elem);
    for (const JsonValue& d : shape->items) {
      if (!d.is_integer || d.integer < 0) return InvalidArgument(what, " has a shape entry that is not a non-negative integer");
      if (d.integer > 0 && bytes > (uint64_t(1) << 62) / uint64_t(d.integer))
        return InvalidArgument(what, " has a shape whose byte size overflows");
      bytes *= uint64_t(d.integer);
      t.shape.push_back(d.integer);
    }
    const JsonValue& b = offsets->items[0];
    const JsonValue& e = offsets->items[1];
    if (!b.is_integer || !e.is_integer || b.integer < 0 || e.integer < b.integer)
      return InvalidArgument(what, " has data_offsets that are not integers 0 <= begin <= end");
    if (uint64_t(e.integer - b.integer) != bytes)
      return InvalidArgument(what, " has data_offsets [", b.integer, ", ", e.integer, "] (", e.integer - b.integer,
                             " bytes) but dtype ", dtype->string, " and its shape need ", bytes, " bytes");
    if (uint64_t(e.integer) > data_bytes)
      return InvalidArgument(what, " data ends at ", data_start + uint64_t(e.integer), ", past the end of the file (",
                             size, " bytes)");
    t.file_offset = int64_t(data_start) + b.integer;
    t.byte_size = int64_t(bytes);
    f.tensors[tensor] = std::move(t);
  }
  return f;
}

}  // namespace hexir::compiler::llama
