// Assembles a .vmfb file (vm/module.fbs) from already-encoded parts: the 24-byte header,
// the FlatBuffer, then each segment (rodata first, then executable binaries) at a 64-byte
// aligned file offset, with the checksums of the bytecode, of each segment and of the
// FlatBuffer. MLIR-free so it can be unit tested directly.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vm/module_header.h"

namespace hexir::compiler::bytecode {

constexpr uint32_t kFormatVersion = vm::kModuleVersion;
constexpr uint64_t kSegmentAlignment = vm::kSegmentAlignment;

using Attrs = std::vector<std::pair<std::string, std::string>>;

struct FunctionData {
  std::string name;
  std::string signature;  // "args_results" over {i, f, r}
  uint32_t value_register_count = 0;
  uint32_t ref_register_count = 0;
  std::vector<uint32_t> code;
  Attrs attrs;
  bool exported = true;
};

struct ImportData {
  std::string module;     // "hal"
  std::string name;       // "hal.device.default"
  std::string signature;  // exact, no '*'
};

struct ExecutableData {
  std::string format;  // "cpu-elf-x86_64"
  std::vector<uint8_t> binary;
  std::vector<std::string> entry_points;
  Attrs attrs;
  // Empty, or one mask per entry point (bit i: binding i may be written).
  std::vector<uint64_t> entry_written_bindings;
};

struct ModuleData {
  std::string name;
  std::vector<ImportData> imports;
  std::vector<FunctionData> functions;
  std::vector<std::string> strings;
  std::vector<std::vector<uint8_t>> rodata;  // by rodata ordinal
  std::vector<ExecutableData> executables;
  uint32_t value_global_count = 0;
  uint32_t ref_global_count = 0;
  int32_t initializer = -1;  // function ordinal run once at context load ("_"), or -1
  std::vector<std::string> devices;  // device kinds by ordinal ("cpu", "cuda"); empty: one of any kind
};

// The complete file contents.
std::vector<uint8_t> SerializeModule(const ModuleData& module);

}  // namespace hexir::compiler::bytecode
