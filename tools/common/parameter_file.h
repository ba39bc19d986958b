// A parameter file written by `hexir-import model.onnx --parameters=FILE`
// (compiler/importers/onnx/ParameterFile.h: GGUF with `general.architecture` =
// "hexir.parameters", `hexir.entry`, `hexir.first_argument`, one plain-typed tensor per
// trailing argument of the entry function): memory-mapped once, checked against the
// function's reflected argument types, each tensor uploaded from the mapping into its own
// device buffer. Used by hexir-run --parameters, the C API (hexir_parameters_*) and the Python
// package's hexir.Parameters.
//
// Ownership: a ParameterFile owns its read-only mapping (unmapped on destruction); uploaded
// views are independent device buffers. Immutable after Open, so thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "hal/api.h"
#include "tools/common/invocation.h"

namespace hexir::tools {

class ParameterFile {
 public:
  struct Tensor {
    std::string name;
    int32_t element_type = 0;  // hal element type code
    int64_t elements = 0;
    const uint8_t* data = nullptr;  // in the mapping
    size_t byte_size = 0;
  };

  // True when the file at `path` is a GGUF file whose architecture is "hexir.parameters".
  static bool IsParameterFile(const std::string& path);
  // Maps and validates `path` (GGUF ranges: llama/Gguf.h). Errors name the path: missing,
  // empty, not GGUF, another architecture, a tensor of a type without a plain byte size.
  static StatusOr<std::unique_ptr<ParameterFile>> Open(const std::string& path);
  ~ParameterFile();

  const std::string& path() const { return path_; }
  const std::string& entry() const { return entry_; }  // the function the file is for
  size_t first_argument() const { return first_argument_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }

  // Checks that `function` (its reflected args) takes these tensors as args[first_argument()..]
  // (the last ones): count, element type, element count of a static shape. Errors name the
  // file, the function and, per tensor, the argument index, its type and the tensor.
  Status CheckArguments(const std::vector<AbiType>& args, const std::string& function) const;
  // The reflected argument types of `fn` ("abi.args"), checked by CheckArguments: what Upload
  // takes.
  StatusOr<std::vector<AbiType>> CheckFunction(const vm::Function& fn) const;

  // One device buffer per tensor, written from the mapping, with its argument's dims
  // (CheckArguments first). Returns when the bytes are on the device.
  StatusOr<std::vector<vm::Ref<hal::BufferView>>> Upload(hal::Device& device,
                                                         const std::vector<AbiType>& args) const;
  // The same with each tensor uploaded to its argument's device: `argument_devices[i]` for
  // argument i (a module of several devices places arguments: tools::ArgumentDevices).
  StatusOr<std::vector<vm::Ref<hal::BufferView>>> Upload(
      const std::vector<hal::Device*>& argument_devices, const std::vector<AbiType>& args) const;

 private:
  ParameterFile() = default;
  std::string path_, entry_;
  size_t first_argument_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace hexir::tools
