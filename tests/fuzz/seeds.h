// The fuzzer's seed corpus: valid modules built with vm/testing/builder that together use
// every opcode family (arithmetic, f64, casts, branches, fused branches and loops, switch,
// calls, imports of the fake HAL, globals + initializer, rodata, executables, lists, refs
// with MOVE and release, fail). Each seed loads and links against the fake HAL.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hexir::fuzz {

// (file name, bytes) per seed.
std::vector<std::pair<std::string, std::vector<uint8_t>>> SeedModules();

}  // namespace hexir::fuzz
