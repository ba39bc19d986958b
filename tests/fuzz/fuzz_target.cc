// libFuzzer entry point: every input is a candidate .vmfb (see harness.h).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hexir::fuzz::RunModuleBytes(data, size);
  return 0;
}
