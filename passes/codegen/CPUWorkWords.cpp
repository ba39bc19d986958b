#include "passes/codegen/CPUWorkWords.h"

#include <map>
#include <optional>
#include <string>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// The word each dynamic dim ("aIdJ") and each scalar ("aI") of `signature` is read from.
std::map<std::string, int64_t> WordsOf(ArrayRef<Type> signature) {
  std::map<std::string, int64_t> words;
  int64_t word = 0;
  for (auto [i, type] : llvm::enumerate(signature)) {
    const std::string arg = "a" + std::to_string(i);
    if (auto memref = dyn_cast<MemRefType>(type)) {
      for (int64_t d = 0; d < memref.getRank(); ++d)
        if (memref.isDynamicDim(d)) words[arg + "d" + std::to_string(d)] = word++;
    } else {
      // Scalars: a word each; only integers and indices are extents.
      if (type.isIndex() || type.isInteger(64) || type.isInteger(32)) words[arg] = word;
      ++word;
    }
  }
  return words;
}

// `formula` ("c + c*s*s + ...") with each symbol replaced by its word, or nullopt when a term
// is malformed or a symbol has no word.
std::optional<std::string> Translate(StringRef formula, const std::map<std::string, int64_t>& words) {
  std::string out;
  SmallVector<StringRef> terms;
  formula.split(terms, " + ");
  for (StringRef term : terms) {
    SmallVector<StringRef> factors;
    term.split(factors, '*');
    int64_t coefficient = 0;
    if (factors.empty() || factors.front().getAsInteger(10, coefficient)) return std::nullopt;
    std::string t = std::to_string(coefficient);
    for (StringRef symbol : llvm::drop_begin(factors)) {
      auto it = words.find(symbol.str());
      if (it == words.end()) return std::nullopt;
      t += "*w" + std::to_string(it->second);
    }
    out += (out.empty() ? "" : " + ") + t;
  }
  return out;
}

}  // namespace

void AttachWorkWords(ExecutableOp exe, ArrayRef<Type> signature, int64_t paramBinding) {
  // Codegen runs before hexir-attach-dispatch-costs moves the costs into hexir.attrs.
  const char* holder = exe->hasAttr(kCostsAttr) ? kCostsAttr : kExecutableAttrsAttr;
  auto attrs = exe->getAttrOfType<DictionaryAttr>(holder);
  if (!attrs) return;
  const std::string prefix = "cost." + exe.getSymName().str() + ".";
  const std::map<std::string, int64_t> words = WordsOf(signature);
  NamedAttrList merged(attrs);
  Builder b(exe.getContext());
  bool any = false;
  for (const char* field : {"bytes_read", "bytes_written", "flops"}) {
    auto formula = attrs.getAs<StringAttr>(prefix + field + ".formula");
    if (!formula) continue;
    std::optional<std::string> translated = Translate(formula.getValue(), words);
    if (!translated) continue;
    merged.set(prefix + field + ".words", b.getStringAttr(*translated));
    any = true;
  }
  if (!any) return;
  merged.set(prefix + "params", b.getStringAttr(std::to_string(paramBinding)));
  exe->setAttr(holder, merged.getDictionary(exe.getContext()));
}

}  // namespace hexir::codegen
