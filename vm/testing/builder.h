// A small assembler and .vmfb writer for VM tests, fuzzers and benchmarks.
//
//   testing::ModuleBuilder mb("m");
//   auto& f = mb.AddFunction("add", "ii_i");
//   f.Op(Op::AddI64).V(2).V(0).V(1);
//   f.Op(Op::Return).L({testing::V(2)});
//   mb.AddExport("add", f.ordinal());
//   StatusOr<std::vector<uint8_t>> bytes = mb.Build();
//
// Each operand method must follow the operand kinds of the current opcode in vm/isa.def;
// a mismatch, an unbound label or an unfinished instruction makes Build() fail with a message.
// Word() appends a raw word and switches checking off for that instruction (for tests that
// need malformed code). Register counts default to the highest register used + 1;
// SetRegisterCounts() fixes them exactly. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "vm/isa.h"
#include "vm/module_header.h"

namespace hexir::vm::testing {

// A list / parallel-copy entry (see isa.def "L" and "P").
struct Reg {
  uint32_t word;
};
inline Reg V(uint32_t index) { return Reg{index}; }
inline Reg R(uint32_t index) { return Reg{kRefBit | index}; }
inline Reg Move(uint32_t index) { return Reg{kRefBit | kMoveBit | index}; }

struct Label {
  uint32_t id;
};
using Copies = std::vector<std::pair<Reg, Reg>>;  // (source, destination)

class FunctionBuilder {
 public:
  FunctionBuilder(uint32_t ordinal, std::string name, std::string signature)
      : ordinal_(ordinal), name_(std::move(name)), signature_(std::move(signature)) {}

  uint32_t ordinal() const { return ordinal_; }
  const std::string& name() const { return name_; }
  const std::string& signature() const { return signature_; }
  // Word offset of the next instruction or operand.
  uint32_t offset() const { return static_cast<uint32_t>(words_.size()); }
  std::vector<uint32_t>& words() { return words_; }

  Label NewLabel();
  FunctionBuilder& Bind(Label label);  // at offset()

  FunctionBuilder& Op(vm::Op op);
  FunctionBuilder& V(uint32_t reg);
  FunctionBuilder& R(uint32_t reg, bool move = false);
  FunctionBuilder& K(int64_t value);
  FunctionBuilder& KF(double value);  // a K operand holding f64 bits
  FunctionBuilder& J(int32_t value);
  FunctionBuilder& T(Label target);
  FunctionBuilder& F(uint32_t function);
  FunctionBuilder& M(uint32_t import);
  FunctionBuilder& D(uint32_t rodata);
  FunctionBuilder& S(uint32_t string);
  FunctionBuilder& G(uint32_t global);
  FunctionBuilder& L(const std::vector<Reg>& list);
  FunctionBuilder& P(const Copies& copies);
  FunctionBuilder& W(const std::vector<std::pair<Label, Copies>>& cases);
  FunctionBuilder& Word(uint32_t raw);

  void SetRegisterCounts(uint32_t value_count, uint32_t ref_count);
  void AddAttr(std::string key, std::string value);

  // Resolves labels; fails on any recorded misuse. Used by ModuleBuilder::Build.
  StatusOr<std::vector<uint32_t>> Finish() const;
  uint32_t value_register_count() const;
  uint32_t ref_register_count() const;
  const std::vector<std::pair<std::string, std::string>>& attrs() const { return attrs_; }

 private:
  bool Expect(char kind);
  void UseValue(uint32_t index);
  void UseRef(uint32_t index);
  void UseEntry(Reg reg);
  void AppendCopies(const Copies& copies);  // the count, then the pairs (P, and each W case)

  uint32_t ordinal_;
  std::string name_, signature_;
  std::vector<uint32_t> words_;
  std::vector<int64_t> labels_;                       // bound offset or -1
  std::vector<std::pair<uint32_t, uint32_t>> fixups_;  // (word, label)
  const char* pending_ = "";  // operand kinds still expected by the current instruction
  bool unchecked_ = false;
  std::string error_;
  uint32_t used_values_ = 0, used_refs_ = 0;
  bool fixed_counts_ = false;
  uint32_t fixed_values_ = 0, fixed_refs_ = 0;
  std::vector<std::pair<std::string, std::string>> attrs_;
};

class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name = "test") : name_(std::move(name)) {}

  FunctionBuilder& AddFunction(std::string name, std::string signature);
  FunctionBuilder& function(uint32_t ordinal) { return *functions_[ordinal]; }
  // `full_name` is "module.function"; the module part is the text before the first '.'.
  uint32_t AddImport(std::string full_name, std::string signature);
  void AddExport(std::string name, uint32_t function);
  uint32_t AddString(std::string text);
  // Returns the rodata ordinal (D operand); each rodata gets its own segment.
  uint32_t AddRodata(std::vector<uint8_t> bytes);
  // `written_bindings`: ExecutableDef.entry_written_bindings (empty: absent).
  uint32_t AddExecutable(std::string format, std::vector<uint8_t> binary,
                         std::vector<std::string> entry_points,
                         std::vector<std::pair<std::string, std::string>> attrs = {},
                         std::vector<uint64_t> written_bindings = {});
  void SetGlobals(uint32_t value_count, uint32_t ref_count);
  void SetInitializer(int32_t function);
  void AddAttr(std::string key, std::string value);
  // Written to both the header and the table (tests of the compatibility rule).
  void SetVersion(uint32_t version) { version_ = version; }
  // The module's device list (Module.devices: kinds by ordinal).
  void SetDevices(std::vector<std::string> kinds) { devices_ = std::move(kinds); }

  // A complete .vmfb: header, FlatBuffer, 64-byte aligned segments.
  StatusOr<std::vector<uint8_t>> Build() const;

 private:
  struct Import {
    std::string name, signature;
  };
  struct Executable {
    std::string format;
    uint32_t segment;
    std::vector<std::string> entry_points;
    std::vector<std::pair<std::string, std::string>> attrs;
    std::vector<uint64_t> written_bindings;
  };

  std::string name_;
  uint32_t version_ = kModuleVersion;  // vm/module_header.h
  std::vector<std::string> devices_;
  std::vector<std::unique_ptr<FunctionBuilder>> functions_;
  std::vector<Import> imports_;
  std::vector<std::pair<std::string, uint32_t>> exports_;
  std::vector<std::string> strings_;
  std::vector<std::vector<uint8_t>> segments_;
  std::vector<uint32_t> rodata_;  // rodata ordinal -> segment
  std::vector<Executable> executables_;
  uint32_t value_globals_ = 0, ref_globals_ = 0;
  int32_t initializer_ = -1;
  std::vector<std::pair<std::string, std::string>> attrs_;

 public:
  ModuleBuilder(const ModuleBuilder&) = delete;
  ModuleBuilder& operator=(const ModuleBuilder&) = delete;
};

// Recomputes every checksum of a module edited after Build() (the bytecode's, each segment's,
// the FlatBuffer's) so that tests and fuzzers reach the checks behind the integrity check.
// False (bytes unchanged or partly resealed) when the header or FlatBuffer does not parse.
bool ResealModule(std::vector<uint8_t>& bytes);

}  // namespace hexir::vm::testing
