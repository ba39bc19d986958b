// A fast 64-bit checksum for detecting accidental corruption (module segments, files).
//
// The function is XXH64 with seed 0 (4 lanes of multiply-rotate over 32-byte stripes, then a
// tail and an avalanche), written here; it runs at memory speed (several GB/s on one core).
// It is not a cryptographic hash: it detects corruption, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hexir {

// Checksum of `size` bytes at `data` (may be null when size is 0). Any alignment.
uint64_t Checksum64(const void* data, size_t size);

}  // namespace hexir
