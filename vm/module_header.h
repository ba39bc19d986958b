// The 24-byte .vmfb file header (layout and compatibility rules: vm/module.fbs).
//
// Shared by the reader (vm/module.cc), the compiler's writer (compiler/bytecode/ModuleFile.cc)
// and the test builder, so the layout is written down once. Header-only, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hexir::vm {

inline constexpr char kModuleMagic[8] = {'H', 'X', 'I', 'R', 'V', 'M', 'F', 'B'};
inline constexpr uint32_t kModuleVersionMajor = 2;
// 2.0 added the checksums (header, SegmentRef.checksum, Module.bytecode_checksum) and `assert`.
// 2.1 added Module.devices (optional: 2.0 files load as one device).
// 2.2 added div.s.i32 / rem.s.i32 (0x28, 0x29); div.s.i64 / rem.s.i64 trap on INT64_MIN / -1.
// 2.3 added cmp.eq.ref (0x66).
inline constexpr uint32_t kModuleVersionMinor = 3;
inline constexpr uint32_t kModuleVersion = kModuleVersionMajor << 16 | kModuleVersionMinor;
inline constexpr size_t kModuleHeaderSize = 24;
inline constexpr size_t kSegmentAlignment = 64;

// Byte offsets of the header's fields.
inline constexpr size_t kHeaderVersionOffset = 8;
inline constexpr size_t kHeaderFlatBufferSizeOffset = 12;
inline constexpr size_t kHeaderChecksumOffset = 16;

struct ModuleHeader {
  uint32_t version = kModuleVersion;
  uint32_t flatbuffer_size = 0;
  uint64_t flatbuffer_checksum = 0;  // Checksum64 of the flatbuffer_size bytes after the header
};

// Writes the magic and `header` into out[0, kModuleHeaderSize) (little-endian hosts only).
inline void WriteModuleHeader(const ModuleHeader& header, uint8_t* out) {
  std::memcpy(out, kModuleMagic, sizeof(kModuleMagic));
  std::memcpy(out + kHeaderVersionOffset, &header.version, 4);
  std::memcpy(out + kHeaderFlatBufferSizeOffset, &header.flatbuffer_size, 4);
  std::memcpy(out + kHeaderChecksumOffset, &header.flatbuffer_checksum, 8);
}

// Reads the fields after the magic from in[0, kModuleHeaderSize); the caller checks the magic.
inline ModuleHeader ReadModuleHeader(const uint8_t* in) {
  ModuleHeader header;
  std::memcpy(&header.version, in + kHeaderVersionOffset, 4);
  std::memcpy(&header.flatbuffer_size, in + kHeaderFlatBufferSizeOffset, 4);
  std::memcpy(&header.flatbuffer_checksum, in + kHeaderChecksumOffset, 8);
  return header;
}

}  // namespace hexir::vm
