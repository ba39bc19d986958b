// libFuzzer entry point: every input is a candidate .vmfb (see harness.h). Inputs are resealed
// first (their checksums recomputed, vm/testing/builder.h) so that mutants get past the
// integrity check to the verifier and the interpreter; integrity_fuzz_target.cc fuzzes the
// integrity check itself.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/fuzz/harness.h"
#include "vm/testing/builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  hexir::vm::testing::ResealModule(bytes);
  hexir::fuzz::RunModuleBytes(bytes.data(), bytes.size());
  return 0;
}
