#include "tools/hexir-quantize/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hexir::tools {

using compiler::llama::GgufValue;
using compiler::llama::GgufValueType;

namespace {
constexpr uint64_t kAlignment = 32;

template <typename T>
void Append(std::vector<uint8_t>* out, T v) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out->insert(out->end(), bytes, bytes + sizeof(T));
}
void AppendString(std::vector<uint8_t>* out, const std::string& s) {
  Append<uint64_t>(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}
}  // namespace

template <typename T>
void GgufWriter::Put(T v) {
  Append(&metadata_, v);
}
void GgufWriter::PutString(const std::string& s) { AppendString(&metadata_, s); }

void GgufWriter::Key(const std::string& key, GgufValueType type) {
  PutString(key);
  Put<uint32_t>(uint32_t(type));
  ++metadata_count_;
}

void GgufWriter::AddString(const std::string& key, const std::string& value) {
  Key(key, GgufValueType::kString);
  PutString(value);
}
void GgufWriter::AddUint32(const std::string& key, uint32_t value) {
  Key(key, GgufValueType::kUint32);
  Put(value);
}
void GgufWriter::AddFloat32(const std::string& key, float value) {
  Key(key, GgufValueType::kFloat32);
  Put(value);
}
void GgufWriter::AddValue(const std::string& key, const GgufValue& value) {
  Key(key, value.type);
  Value(value);
}

void GgufWriter::Value(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kUint8: Put<uint8_t>(uint8_t(v.u)); break;
    case GgufValueType::kInt8: Put<int8_t>(int8_t(v.i)); break;
    case GgufValueType::kUint16: Put<uint16_t>(uint16_t(v.u)); break;
    case GgufValueType::kInt16: Put<int16_t>(int16_t(v.i)); break;
    case GgufValueType::kUint32: Put<uint32_t>(uint32_t(v.u)); break;
    case GgufValueType::kInt32: Put<int32_t>(int32_t(v.i)); break;
    case GgufValueType::kFloat32: Put<float>(float(v.f)); break;
    case GgufValueType::kBool: Put<uint8_t>(uint8_t(v.u != 0)); break;
    case GgufValueType::kString: PutString(v.s); break;
    case GgufValueType::kUint64: Put<uint64_t>(v.u); break;
    case GgufValueType::kInt64: Put<int64_t>(v.i); break;
    case GgufValueType::kFloat64: Put<double>(v.f); break;
    case GgufValueType::kArray:
      Put<uint32_t>(uint32_t(v.elem_type));
      Put<uint64_t>(v.array.size());
      for (const GgufValue& e : v.array) Value(e);
      break;
  }
}

void GgufWriter::AddTensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type,
                           std::vector<uint8_t> data) {
  tensors_.push_back({name, ne, type, std::move(data)});
}

Status GgufWriter::Write(const std::string& path) const {
  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  Append<uint32_t>(&head, 3);
  Append<uint64_t>(&head, tensors_.size());
  Append<uint64_t>(&head, metadata_count_);
  head.insert(head.end(), metadata_.begin(), metadata_.end());
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    AppendString(&head, t.name);
    Append<uint32_t>(&head, uint32_t(t.ne.size()));
    for (uint64_t d : t.ne) Append<uint64_t>(&head, d);
    Append<uint32_t>(&head, t.type);
    Append<uint64_t>(&head, offset);
    offset += (t.data.size() + kAlignment - 1) / kAlignment * kAlignment;
  }
  head.resize((head.size() + kAlignment - 1) / kAlignment * kAlignment, 0);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return NotFound("cannot create '", path, "': ", std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  static const uint8_t kZeros[kAlignment] = {};
  for (const Tensor& t : tensors_) {
    ok = ok && std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size();
    size_t pad = (kAlignment - t.data.size() % kAlignment) % kAlignment;
    ok = ok && std::fwrite(kZeros, 1, pad, f) == pad;
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return DataLoss("writing '", path, "' failed: ", std::strerror(errno));
  return Status::Ok();
}

}  // namespace hexir::tools
