// The MLIR text writer of the llama program's emitters (EmitModule.cc, Sampler.cc): fresh SSA
// names, tensor.empty / linalg.fill, and linalg.generic with the attributes the compiler reads
// (`hexir.device` placement, `hexir.dispatch_group` one-kernel groups).
//
// Appends to a stream it does not own (which must outlive it). Not thread-safe; MLIR-free.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace hexir::compiler::llama {

struct GgmlBlockInfo;

// An SSA value and its type.
struct Operand {
  std::string name;
  std::string type;
  const GgmlBlockInfo* kept = nullptr;  // a weight kept as stored in a GGUF file (WeightTensor::kept)
};

class Emitter {
 public:
  // A kernel body's text from its block argument names (ins then out), ending with linalg.yield.
  using Body = std::function<std::string(const std::vector<std::string>&)>;

  // SSA names are `%<prefix><hint><n>`: emitters writing into one function need distinct prefixes.
  explicit Emitter(std::ostream& os, std::string prefix = "") : os_(os), prefix_(std::move(prefix)) {}

  std::string Fresh(const std::string& hint = "v") { return "%" + prefix_ + hint + std::to_string(next_++); }
  std::ostream& out() { return os_; }
  // The device the generics emitted from now on are annotated with (-1: none).
  void SetDevice(int64_t device) { device_ = device; }

  // While non-empty, generics carry `hexir.dispatch_group = "<group>"`: they compile to one
  // kernel (dialects/hexir/IR/HexirAttributes.h kDispatchGroupAttr).
  std::string group;
  // While non-empty, generics carry `hexir.block_matvec = "<ggml type>"`: a matvec (or M rows
  // of matvecs) whose body decodes that block format (the CPU target's vector kernel,
  // passes/codegen/CPUMatvecKernel.h).
  std::string block_matvec;

  // One line of a kernel body (indented inside the generic's block).
  static std::string Line(const std::string& s) { return "      " + s + "\n"; }

  // tensor.empty; `dyn` lists the dynamic sizes.
  std::string Empty(const std::string& type, const std::string& dyn = "");
  // tensor.empty + linalg.fill with `value` (of type `elem`); just the tensor.empty when
  // `value` is empty.
  std::string Filled(const std::string& type, const std::string& value, const std::string& elem,
                     const std::string& dyn = "");
  // linalg.generic over `ins` into `out`; `arg_elems` are the block arguments' types.
  std::string Generic(const std::vector<std::string>& maps, const std::vector<std::string>& iters,
                      const std::vector<Operand>& ins, const Operand& out,
                      const std::vector<std::string>& arg_elems, const Body& body);

 private:
  std::ostream& os_;
  std::string prefix_;
  int next_ = 0;
  int64_t device_ = -1;
};

}  // namespace hexir::compiler::llama
