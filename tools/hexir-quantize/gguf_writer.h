// A GGUF (version 3) file writer: metadata key/values, then tensor infos, then the tensor
// data, each tensor aligned to 32 bytes (GGUF's default alignment). Used by hexir-quantize;
// the layout is the one compiler/importers/llama/Gguf.h reads. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Gguf.h"

namespace hexir::tools {

class GgufWriter {
 public:
  void AddString(const std::string& key, const std::string& value);
  void AddUint32(const std::string& key, uint32_t value);
  void AddFloat32(const std::string& key, float value);
  // A value read from another GGUF file (any type, arrays included), written as it was.
  void AddValue(const std::string& key, const compiler::llama::GgufValue& value);
  // `ne` in ggml order (ne[0] innermost); `data` is the tensor's bytes in ggml type `type`.
  void AddTensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, std::vector<uint8_t> data);

  // Writes the file; errors name the path.
  Status Write(const std::string& path) const;

 private:
  void Key(const std::string& key, compiler::llama::GgufValueType type);
  void Value(const compiler::llama::GgufValue& value);
  template <typename T>
  void Put(T v);
  void PutString(const std::string& s);

  std::vector<uint8_t> metadata_;
  uint64_t metadata_count_ = 0;
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
  };
  std::vector<Tensor> tensors_;
};

}  // namespace hexir::tools
