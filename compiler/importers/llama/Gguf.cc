#include "compiler/importers/llama/Gguf.h"

#include <cstdio>
#include <cstring>
#include <limits>

#include "compiler/importers/llama/GgmlBlocks.h"
#include "hal/element_type.h"

namespace hexir::compiler::llama {
namespace {

constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are refused (no stack blowup)
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

// Every read checks `n <= size - pos` (never `pos + n`), so no arithmetic can wrap.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  Status Need(uint64_t n, const std::string& what) const {
    if (n > left())
      return InvalidArgument("GGUF: ", what, " at offset ", pos_, " needs ", n, " bytes but the file has ",
                             left(), " left (file size ", size_, ")");
    return Status::Ok();
  }
  template <typename T>
  StatusOr<T> Read(const std::string& what) {
    HEXIR_RETURN_IF_ERROR(Need(sizeof(T), what));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  StatusOr<std::string> String(const std::string& what) {
    size_t at = pos_;
    HEXIR_ASSIGN_OR_RETURN(uint64_t n, Read<uint64_t>(what + " (string length)"));
    if (n > left())
      return InvalidArgument("GGUF: ", what, " at offset ", at, ": string length ", n, " exceeds the ",
                             left(), " bytes left in the file");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Smallest encoded size of a value of this type (arrays: type + count; strings: length).
uint64_t MinValueBytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16: case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64: case GgufValueType::kInt64: case GgufValueType::kFloat64:
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 1;
}

bool KnownValueType(uint32_t t) { return t <= 12; }

Status ReadValue(Reader& r, GgufValueType type, const std::string& what, int depth, GgufValue* v) {
  v->type = type;
  v->offset = int64_t(r.pos());
  switch (type) {
    case GgufValueType::kUint8: { HEXIR_ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(what)); v->u = x; v->i = x; break; }
    case GgufValueType::kInt8: { HEXIR_ASSIGN_OR_RETURN(int8_t x, r.Read<int8_t>(what)); v->i = x; v->u = uint64_t(x); break; }
    case GgufValueType::kUint16: { HEXIR_ASSIGN_OR_RETURN(uint16_t x, r.Read<uint16_t>(what)); v->u = x; v->i = x; break; }
    case GgufValueType::kInt16: { HEXIR_ASSIGN_OR_RETURN(int16_t x, r.Read<int16_t>(what)); v->i = x; v->u = uint64_t(x); break; }
    case GgufValueType::kUint32: { HEXIR_ASSIGN_OR_RETURN(uint32_t x, r.Read<uint32_t>(what)); v->u = x; v->i = x; break; }
    case GgufValueType::kInt32: { HEXIR_ASSIGN_OR_RETURN(int32_t x, r.Read<int32_t>(what)); v->i = x; v->u = uint64_t(x); break; }
    case GgufValueType::kUint64: {
      HEXIR_ASSIGN_OR_RETURN(uint64_t x, r.Read<uint64_t>(what));
      v->u = x;
      v->i = x > uint64_t(std::numeric_limits<int64_t>::max()) ? -1 : int64_t(x);
      break;
    }
    case GgufValueType::kInt64: { HEXIR_ASSIGN_OR_RETURN(int64_t x, r.Read<int64_t>(what)); v->i = x; v->u = uint64_t(x); break; }
    case GgufValueType::kFloat32: { HEXIR_ASSIGN_OR_RETURN(float x, r.Read<float>(what)); v->f = x; break; }
    case GgufValueType::kFloat64: { HEXIR_ASSIGN_OR_RETURN(double x, r.Read<double>(what)); v->f = x; break; }
    case GgufValueType::kBool: {
      HEXIR_ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(what));
      if (x > 1) return InvalidArgument("GGUF: ", what, " at offset ", v->offset, ": bool value is ", int(x), " (not 0 or 1)");
      v->u = x;
      v->i = x;
      break;
    }
    case GgufValueType::kString: { HEXIR_ASSIGN_OR_RETURN(v->s, r.String(what)); break; }
    case GgufValueType::kArray: {
      if (depth >= kMaxArrayDepth)
        return InvalidArgument("GGUF: ", what, " at offset ", v->offset, ": arrays nested deeper than ", kMaxArrayDepth);
      HEXIR_ASSIGN_OR_RETURN(uint32_t et, r.Read<uint32_t>(what + " (array element type)"));
      if (!KnownValueType(et))
        return InvalidArgument("GGUF: ", what, " at offset ", v->offset, ": unknown array element type ", et);
      v->elem_type = GgufValueType(et);
      size_t count_at = r.pos();
      HEXIR_ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>(what + " (array length)"));
      // Reject impossible counts before allocating anything.
      if (n > r.left() / MinValueBytes(v->elem_type))
        return InvalidArgument("GGUF: ", what, " at offset ", count_at, ": array of ", n, " ",
                               GgufValueTypeName(v->elem_type), " values cannot fit in the ", r.left(),
                               " bytes left in the file");
      v->array.resize(size_t(n));
      for (uint64_t k = 0; k < n; ++k)
        HEXIR_RETURN_IF_ERROR(ReadValue(r, v->elem_type, StrCat(what, "[", k, "]"), depth + 1, &v->array[k]));
      break;
    }
  }
  return Status::Ok();
}

// Bytes per element for the plain ggml types (named like hal/element_types.def's rows); 0 for
// others (block-quantized or unknown).
int64_t PlainTypeBytes(uint32_t t) { return hal::ElementTypeByteSize(hal::ElementTypeFromName(GgmlTypeName(t))); }

}  // namespace

const char* GgufValueTypeName(GgufValueType type) {
  static const char* const kNames[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                       "bool", "string", "array", "uint64", "int64", "float64"};
  uint32_t t = uint32_t(type);
  return t <= 12 ? kNames[t] : "?";
}

const char* GgmlTypeName(uint32_t type) {
  static const char* const kNames[] = {
      "f32", "f16", "q4_0", "q4_1", "q4_2", "q4_3", "q5_0", "q5_1", "q8_0", "q8_1",
      "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s",
      "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m", "bf16"};
  return type < sizeof(kNames) / sizeof(kNames[0]) ? kNames[type] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kUint16:
    case GgufValueType::kInt16: case GgufValueType::kUint32: case GgufValueType::kInt32:
    case GgufValueType::kUint64: case GgufValueType::kInt64: return true;
    default: return false;
  }
}

uint64_t GgufTensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = key_index.find(key);
  return it == key_index.end() ? nullptr : &metadata[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index.find(name);
  return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

bool IsGguf(const uint8_t* data, size_t size) { return size >= 4 && std::memcmp(data, "GGUF", 4) == 0; }

StatusOr<GgufFile> ParseGguf(const uint8_t* data, size_t size) {
  if (size < 4) return InvalidArgument("GGUF: file has ", size, " bytes, shorter than the 4-byte magic");
  if (!IsGguf(data, size))
  {
    char got[16];
    std::snprintf(got, sizeof(got), "%02x %02x %02x %02x", data[0], data[1], data[2], data[3]);
    return InvalidArgument("GGUF: bad magic at offset 0: expected 'GGUF' (47 47 55 46), got ", got);
  }
  Reader r(data, size);
  (void)r.Read<uint32_t>("magic");
  GgufFile f;
  HEXIR_ASSIGN_OR_RETURN(f.version, r.Read<uint32_t>("version"));
  if (f.version != 2 && f.version != 3) {
    if (f.version == 0x02000000u || f.version == 0x03000000u)
      return InvalidArgument("GGUF: version at offset 4 reads as ", f.version,
                             ": a big-endian file, which this reader does not support");
    return InvalidArgument("GGUF: version ", f.version, " at offset 4 is not supported (only 2 and 3)");
  }
  HEXIR_ASSIGN_OR_RETURN(uint64_t n_tensors, r.Read<uint64_t>("tensor count"));
  HEXIR_ASSIGN_OR_RETURN(uint64_t n_kv, r.Read<uint64_t>("metadata count"));
  // Each key/value takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info
  // at least 8 + 4 + 4 + 8.
  if (n_kv > r.left() / 13)
    return InvalidArgument("GGUF: metadata count ", n_kv, " at offset 16 cannot fit in the file (", size, " bytes)");
  if (n_tensors > r.left() / 24)
    return InvalidArgument("GGUF: tensor count ", n_tensors, " at offset 8 cannot fit in the file (", size, " bytes)");

  f.metadata.reserve(size_t(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    size_t at = r.pos();
    HEXIR_ASSIGN_OR_RETURN(std::string key, r.String(StrCat("metadata key #", k)));
    HEXIR_ASSIGN_OR_RETURN(uint32_t t, r.Read<uint32_t>(StrCat("type of metadata '", key, "'")));
    if (!KnownValueType(t))
      return InvalidArgument("GGUF: metadata '", key, "' at offset ", at, " has unknown value type ", t);
    if (f.key_index.count(key))
      return InvalidArgument("GGUF: metadata '", key, "' at offset ", at, " is a duplicate key");
    GgufValue v;
    HEXIR_RETURN_IF_ERROR(ReadValue(r, GgufValueType(t), StrCat("metadata '", key, "'"), 0, &v));
    f.key_index[key] = f.metadata.size();
    f.metadata.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = f.Find("general.alignment")) {
    if (a->type != GgufValueType::kUint32 || a->u == 0 || (a->u & (a->u - 1)) != 0)
      return InvalidArgument("GGUF: metadata 'general.alignment' at offset ", a->offset,
                             " must be a uint32 power of two (is ", GgufValueTypeName(a->type), " ",
                             a->is_integer() ? std::to_string(a->u) : std::string("?"), ")");
    f.alignment = a->u;
  }

  f.tensors.reserve(size_t(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    t.info_offset = int64_t(r.pos());
    HEXIR_ASSIGN_OR_RETURN(t.name, r.String(StrCat("tensor info #", k, " name")));
    std::string what = StrCat("tensor '", t.name, "' (info at offset ", t.info_offset, ")");
    if (f.tensor_index.count(t.name)) return InvalidArgument("GGUF: ", what, " is a duplicate tensor name");
    HEXIR_ASSIGN_OR_RETURN(uint32_t n_dims, r.Read<uint32_t>(what + " dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims)
      return InvalidArgument("GGUF: ", what, " has ", n_dims, " dimensions (1..", kMaxDims, " supported)");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      HEXIR_ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>(what + " dimension"));
      if (n == 0 || n > uint64_t(std::numeric_limits<int64_t>::max()) / elements)
        return InvalidArgument("GGUF: ", what, " dimension ", d, " is ", n,
                               n == 0 ? " (must be positive)" : " (the element count overflows)");
      elements *= n;
      t.ne.push_back(n);
    }
    HEXIR_ASSIGN_OR_RETURN(t.type, r.Read<uint32_t>(what + " type"));
    HEXIR_ASSIGN_OR_RETURN(t.offset, r.Read<uint64_t>(what + " data offset"));
    if (t.offset % f.alignment)
      return InvalidArgument("GGUF: ", what, " data offset ", t.offset, " is not a multiple of the alignment ",
                             f.alignment);
    if (const GgmlBlockInfo* block = FindGgmlBlockType(t.type); block && block->block_elements > 1) {
      // ggml stores whole blocks along ne[0]; the byte size follows (elements < 2^63, so no overflow).
      if (t.ne.empty() || t.ne[0] % uint64_t(block->block_elements))
        return InvalidArgument("GGUF: ", what, " (", block->name, ") has ne[0] = ", t.ne.empty() ? 0 : t.ne[0],
                               ", not a multiple of its block size ", block->block_elements);
      t.byte_size = int64_t(elements / uint64_t(block->block_elements)) * block->block_bytes;
    } else if (int64_t b = PlainTypeBytes(t.type)) {
      if (elements > uint64_t(std::numeric_limits<int64_t>::max()) / uint64_t(b))
        return InvalidArgument("GGUF: ", what, " byte size overflows (", elements, " elements of ",
                               GgmlTypeName(t.type), ")");
      t.byte_size = int64_t(elements) * b;
    }
    f.tensor_index[t.name] = f.tensors.size();
    f.tensors.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t end = r.pos();
  uint64_t pad = (f.alignment - end % f.alignment) % f.alignment;
  if (pad > size - end)
    return InvalidArgument("GGUF: the tensor data section (aligned to ", f.alignment, " after the tensor infos end at ",
                           end, ") starts past the end of the file (", size, " bytes)");
  f.data_offset = int64_t(end + pad);
  uint64_t data_size = size - uint64_t(f.data_offset);
  for (GgufTensorInfo& t : f.tensors) {
    std::string what = StrCat("tensor '", t.name, "' (", GgmlTypeName(t.type), ", info at offset ", t.info_offset, ")");
    uint64_t need = t.byte_size < 0 ? 1 : uint64_t(t.byte_size);
    if (t.offset > data_size || need > data_size - t.offset)
      return InvalidArgument("GGUF: ", what, " data at file offset ", uint64_t(f.data_offset) + t.offset,
                             t.byte_size < 0 ? std::string() : StrCat(" (", t.byte_size, " bytes)"),
                             " runs past the end of the file (", size, " bytes)");
    t.file_offset = f.data_offset + int64_t(t.offset);
  }
  return f;
}

}  // namespace hexir::compiler::llama
