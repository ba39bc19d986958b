// What CPU kernel code generation needs to know about the target: the width and number of
// vector registers (register tiles), the data cache sizes (cache tiles) and the integer dot
// instructions (int8 matvecs).
#pragma once

#include <cstdint>

#include "llvm/ADT/StringRef.h"

namespace hexir::codegen {

struct CPUTarget {
  int64_t vectorBits = 128;     // widest f32 vector register: 128 (SSE), 256 (AVX2), 512
  int64_t vectorRegisters = 16;  // architectural vector registers
  int64_t l1Bytes = 32 * 1024;   // per-core L1 data cache
  int64_t l2Bytes = 512 * 1024;  // per-core L2 cache
  // x86 AVX512_VNNI with 512-bit vectors: vpdpbusd, four byte products summed into an i32
  // lane and accumulated in one instruction (the int8 matvec dots).
  bool int8DotAccumulate = false;
};

// `cpu` is "host" (this machine's features and cache sizes) or an LLVM CPU name
// ("x86-64-v3", "znver3"; cache sizes then default to 32 KiB / 512 KiB). An unknown name
// describes a baseline SSE target.
CPUTarget DescribeCPU(llvm::StringRef cpu);

// Whether `cpu` is "host" or a CPU name LLVM knows for this machine's target triple (an
// unknown one makes LLVM print a warning per kernel, then abort on some, e.g. "pentium9000":
// "64-bit code requested on a subtarget that doesn't support it").
bool IsKnownCPU(llvm::StringRef cpu);

}  // namespace hexir::codegen
