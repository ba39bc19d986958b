// The integrity oracle for fuzzing whole modules: which bytes of a valid module its checksums
// protect, and whether a mutant kept all of them. A mutant that loads must have kept every
// protected byte of some seed: any change to checksummed data is refused at load
// (vm/README.md, "Corruption is refused before use").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hexir::fuzz {

struct SealedSeed {
  std::vector<uint8_t> bytes;
  // [begin, end) byte ranges covered by a checksum or checked exactly: the header and the
  // FlatBuffer (bytecode included), then every segment (rodata, executables).
  std::vector<std::pair<size_t, size_t>> protected_ranges;
};

// Loads `bytes` as a module and records its protected ranges; false if it does not load.
bool SealSeed(std::vector<uint8_t> bytes, SealedSeed* out);

// True when `data` has every protected byte of `seed` at the same offset.
bool KeepsProtectedBytes(const SealedSeed& seed, const uint8_t* data, size_t size);

// The oracle: returns an empty string when a mutant that loaded is acceptable (it kept the
// protected bytes of one of `seeds`), else a description of the violation.
std::string CheckLoadedMutant(const std::vector<SealedSeed>& seeds, const uint8_t* data,
                              size_t size);

}  // namespace hexir::fuzz
