// A loaded, verified .vmfb module.
//
// Loading parses the 24-byte header, runs the FlatBuffers verifier, verifies the checksums of
// the bytecode, of every segment and of the FlatBuffer (a mismatch is kDataLoss naming the
// segment: "executable 2 ('main_dispatch_0'): checksum mismatch ..."), then the full structural
// and bytecode verification of vm/verifier.h, exactly once. A Module that exists is valid and
// intact: the interpreter executes its bytecode without bounds checks and the HAL may load its
// executables (native code: load only modules you trust; checksums catch accidents, not
// attackers).
//
// Ownership: the Module owns its bytes (an mmapped read-only file, or a 64-byte aligned heap
// copy). Accessors return views into those bytes, valid while the Module lives. rodata
// ByteBuffers retain the Module. Immutable after load; safe to share across threads/contexts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/span.h"
#include "base/status.h"
#include "vm/module_header.h"
#include "vm/native_module.h"
#include "vm/ref.h"

namespace hexir::vm {

namespace format {
struct Module;
}

// Load-time limits that keep a hostile module from demanding unbounded memory.
inline constexpr uint32_t kMaxRegistersPerBank = 1u << 16;  // per function, per bank
inline constexpr uint32_t kMaxGlobalsPerBank = 1u << 24;

// "args_results" split at '_'; each half over {i, f, r}.
struct Signature {
  std::string_view args;
  std::string_view results;
};
// Parses an exact signature (no '*'). False when malformed.
bool ParseSignature(std::string_view text, Signature* out);

using AttrList = std::vector<std::pair<std::string_view, std::string_view>>;

struct FunctionInfo {
  std::string_view name;       // "" when the module gives none
  std::string_view signature;  // "rri_r"
  Signature kinds;             // parsed signature
  uint32_t value_register_count = 0;
  uint32_t ref_register_count = 0;
  const uint32_t* code = nullptr;  // bytecode_length words, verified
  uint32_t code_length = 0;
  AttrList attrs;
  // Decoded `switch` tables, filled by the verifier: for the switch at word offset o,
  // switch_cases[switch_index[o] + k] is the word offset of case k's (T, P) entry.
  // switch_index has code_length entries when the function has a switch, else none.
  std::vector<uint32_t> switch_index;
  std::vector<uint32_t> switch_cases;
};

struct ImportInfo {
  std::string_view module;     // "hal"
  std::string_view name;       // "hal.buffer_view.dim"
  std::string_view signature;  // exact
  Signature kinds;
};

struct ExportInfo {
  std::string_view name;
  uint32_t function = 0;
};

class Module final : public RefObject, public CallerModule {
  HEXIR_REF_TYPE(Module, "vm.module")
 public:
  // Maps `path` read-only and verifies it. Missing file: kNotFound; unreadable or invalid:
  // kInvalidArgument / kDataLoss; every message names the path.
  static StatusOr<Ref<Module>> LoadFromFile(const std::string& path);
  // Copies `size` bytes into 64-byte aligned storage and verifies them.
  static StatusOr<Ref<Module>> LoadFromMemory(const void* data, size_t size);

  // CallerModule.
  std::string_view name() const override { return name_; }
  uint64_t instance_id() const override { return instance_id_; }
  size_t executable_count() const override;
  StatusOr<ExecutableView> executable(size_t ordinal) const override;

  uint32_t version() const { return version_; }
  const std::vector<FunctionInfo>& functions() const { return functions_; }
  const std::vector<ImportInfo>& imports() const { return imports_; }
  const std::vector<ExportInfo>& exports() const { return exports_; }
  const std::vector<std::string_view>& strings() const { return strings_; }
  size_t rodata_count() const { return rodata_.size(); }
  // Bytes of rodata segment `ordinal` (< rodata_count()), 64-byte aligned, in the module.
  Span<const uint8_t> rodata(size_t ordinal) const { return rodata_[ordinal]; }
  uint32_t value_global_count() const { return value_global_count_; }
  uint32_t ref_global_count() const { return ref_global_count_; }
  // Ordinal of the initializer function, or -1.
  int32_t initializer() const { return initializer_; }
  const AttrList& attrs() const { return attrs_; }
  // The device kinds the module runs on, by device ordinal ("cpu", "cuda"); empty for a
  // module that names none (one device of any kind).
  const std::vector<std::string_view>& devices() const { return devices_; }
  // Function ordinal of the export `name`, or -1.
  int64_t FindExport(std::string_view name) const;

  // Raw access for tools (hexir-dump): the whole file and its FlatBuffer root.
  Span<const uint8_t> bytes() const { return Span<const uint8_t>(data_, size_); }
  const format::Module* def() const { return def_; }

  // Sizes the interpreter's scratch space: the most pairs in one parallel copy, the most
  // arguments / results of one import.
  uint32_t max_copy_pairs() const { return max_copy_pairs_; }
  uint32_t max_import_args() const { return max_import_args_; }
  uint32_t max_import_results() const { return max_import_results_; }

  ~Module() override;

 private:
  friend Status VerifyModule(Module& module);
  Module() = default;
  static StatusOr<Ref<Module>> Load(Ref<Module> module);
  Status Parse();
  // Parse's steps, in this order (CheckIntegrity between segments and functions).
  Status ParseHeader(ModuleHeader* header);
  Status ParseSegments(uint64_t segments_begin, std::vector<uint64_t>* segment_checksums);
  Status ParseFunctions();
  Status ParseImports();
  Status ParseExports();
  Status ParseGlobals();
  Status CheckIntegrity(uint64_t flatbuffer_checksum,
                        const std::vector<uint64_t>& segment_checksums) const;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // munmap vs free
  uint32_t version_ = 0;
  uint64_t instance_id_ = 0;
  const format::Module* def_ = nullptr;

  std::string_view name_;
  std::vector<FunctionInfo> functions_;
  std::vector<ImportInfo> imports_;
  std::vector<ExportInfo> exports_;
  std::vector<std::string_view> strings_;
  std::vector<Span<const uint8_t>> segments_;
  std::vector<Span<const uint8_t>> rodata_;
  uint32_t value_global_count_ = 0;
  uint32_t ref_global_count_ = 0;
  int32_t initializer_ = -1;
  AttrList attrs_;
  std::vector<std::string_view> devices_;
  uint32_t max_copy_pairs_ = 0;
  uint32_t max_import_args_ = 0;
  uint32_t max_import_results_ = 0;
};

}  // namespace hexir::vm
