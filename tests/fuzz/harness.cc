#include "tests/fuzz/harness.h"

#include <vector>

#include "tests/fuzz/fake_hal.h"
#include "vm/api.h"
#include "vm/disassembler.h"
#include "vm/module.h"

namespace hexir::fuzz {

RunResult RunModuleBytes(const uint8_t* data, size_t size) {
  RunResult result;
  auto module = vm::Module::LoadFromMemory(data, size);
  if (!module.ok()) {
    result.first_error = module.status().ToString();
    return result;
  }
  result.loaded = true;
  // The disassembler trusts verified bytecode: exercising it here checks that trust.
  size_t text = 0;
  for (uint32_t f = 0; f < (*module)->functions().size(); ++f) {
    text += vm::DisassembleFunction(**module, f).size();
  }
  (void)text;

  auto context = vm::Context::Create();
  context->SetFuel(kFuel);
  Status s = context->RegisterNativeModule(CreateFakeHalModule());
  if (s.ok()) s = context->LoadModule(**module);
  if (!s.ok()) {
    result.first_error = s.ToString();
    return result;
  }
  result.linked = true;
  const auto& exports = (*module)->exports();
  for (size_t e = 0; e < exports.size() && e < kMaxExports; ++e) {
    auto fn = context->LookupFunction(exports[e].name);
    if (!fn.ok()) continue;  // shadowed by a duplicate name: cannot happen, exports are unique
    const vm::FunctionInfo& info = (*module)->functions()[fn->ordinal];
    std::vector<vm::Variant> args(info.kinds.args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      char k = info.kinds.args[i];
      if (k == 'r') {
        args[i].ref = MakeFakeView({2, 3});
      } else if (k == 'f') {
        args[i].bits = 0x3FF8000000000000;  // 1.5
      } else {
        static const int64_t kInts[] = {5, 0, -1, 3};
        args[i].bits = kInts[i % 4];
      }
    }
    std::vector<vm::Variant> results;
    ++result.invocations;
    Status st = context->Invoke(*fn, args, &results);
    if (st.ok()) {
      ++result.succeeded;
    } else if (result.first_error.empty()) {
      result.first_error = st.ToString();
    }
  }
  return result;
}

}  // namespace hexir::fuzz
