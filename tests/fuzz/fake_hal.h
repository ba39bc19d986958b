// A HAL-like native module for fuzzing and its seed tests: the names and signature patterns of
// a subset of hal/module/hal_imports.def, implemented on inert host objects (no device, no
// kernels run), plus "fuzz.sum" ("*_i"). Every function type-checks its ref arguments and
// bounds its sizes, so any bytecode may call it with anything.
//
// Ownership: the module is stateless; its per-context state owns one fake device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "vm/native_module.h"

namespace hexir::fuzz {

std::shared_ptr<vm::NativeModule> CreateFakeHalModule();

// A "fake.buffer_view" of `dims` over a fresh fake buffer (an argument for 'r' parameters).
vm::Ref<vm::RefObject> MakeFakeView(std::vector<int64_t> dims);

}  // namespace hexir::fuzz
