#include "compiler/importers/onnx/ParameterFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "compiler/importers/llama/Gguf.h"
#include "compiler/importers/onnx/ParameterFileKeys.h"
#include "compiler/importers/onnx/TensorData.h"

namespace hexir::importers::onnx {
namespace {

constexpr uint64_t kAlignment = 32;        // GGUF's default (no general.alignment key)
constexpr uint32_t kGgufString = 8;        // GGUF metadata value types
constexpr uint32_t kGgufUint32 = 4;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void PutString(std::string* out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out->append(s);
}
uint64_t Aligned(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

int ParameterGgmlType(const std::string& et) {
  // GGUF names its plain types with the MLIR spellings (llama/Gguf.h); i1 has no ggml type.
  for (uint32_t type = 0; type < 64; ++type)
    if (et == compiler::llama::GgmlTypeName(type)) return et == "i1" ? -1 : static_cast<int>(type);
  return -1;
}

Status WriteParameterFile(const std::string& path, const std::string& entry,
                          int64_t first_argument, const std::vector<ParameterTensor>& tensors,
                          const std::string& model_dir,
                          const std::function<void(int64_t, int64_t)>& progress) {
  std::string head = "GGUF";
  Put<uint32_t>(&head, 3);
  Put<uint64_t>(&head, tensors.size());
  Put<uint64_t>(&head, 3);  // metadata keys
  PutString(&head, "general.architecture");
  Put<uint32_t>(&head, kGgufString);
  PutString(&head, kParameterFileArchitecture);
  PutString(&head, kParameterFileEntryKey);
  Put<uint32_t>(&head, kGgufString);
  PutString(&head, entry);
  PutString(&head, kParameterFileFirstArgumentKey);
  Put<uint32_t>(&head, kGgufUint32);
  Put<uint32_t>(&head, static_cast<uint32_t>(first_argument));
  uint64_t offset = 0;
  std::vector<int64_t> sizes;
  for (const ParameterTensor& p : tensors) {
    const ::onnx::TensorProto& t = *p.tensor;
    const int type = ParameterGgmlType(p.et);
    const int64_t bytes = TensorByteSize(t, p.et);
    if (type < 0 || bytes < 0)
      return InvalidArgument("tensor '", t.name(), "': element type ", p.et, " cannot be a parameter");
    PutString(&head, t.name());
    std::vector<uint64_t> ne;
    if (t.dims_size() <= 4) {
      for (int i = t.dims_size() - 1; i >= 0; --i) ne.push_back(static_cast<uint64_t>(t.dims(i)));
    } else {
      uint64_t n = 1;
      for (int64_t d : t.dims()) n *= static_cast<uint64_t>(d);
      ne.push_back(n);
    }
    if (ne.empty()) ne.push_back(1);  // a scalar
    Put<uint32_t>(&head, static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) Put<uint64_t>(&head, d);
    Put<uint32_t>(&head, static_cast<uint32_t>(type));
    Put<uint64_t>(&head, offset);
    offset += Aligned(static_cast<uint64_t>(bytes));
    sizes.push_back(bytes);
  }
  head.resize(Aligned(head.size()), '\0');

  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) return NotFound("cannot create parameter file '", path, "': ", std::strerror(errno));
  auto write = [&](const char* data, size_t n) -> Status {
    if (std::fwrite(data, 1, n, f.get()) != n)
      return DataLoss("cannot write parameter file '", path, "': ", std::strerror(errno));
    return Status::Ok();
  };
  HEXIR_RETURN_IF_ERROR(write(head.data(), head.size()));
  static const char kZeros[kAlignment] = {};
  int64_t written = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    HEXIR_RETURN_IF_ERROR(WriteTensorBytes(*tensors[i].tensor, tensors[i].et, model_dir, f.get(), path));
    HEXIR_RETURN_IF_ERROR(write(kZeros, Aligned(sizes[i]) - sizes[i]));
    written += sizes[i];
    if (progress) progress(written, static_cast<int64_t>(offset));
  }
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0)
    return DataLoss("cannot write parameter file '", path, "': ", std::strerror(errno));
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
