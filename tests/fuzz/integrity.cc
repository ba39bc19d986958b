#include "tests/fuzz/integrity.h"

#include <cstring>

#include "vm/module.h"
#include "vm/module_generated.h"

namespace hexir::fuzz {

bool SealSeed(std::vector<uint8_t> bytes, SealedSeed* out) {
  auto module = vm::Module::LoadFromMemory(bytes.data(), bytes.size());
  if (!module.ok()) return false;
  out->protected_ranges.clear();
  out->protected_ranges.emplace_back(
      0, vm::kModuleHeaderSize + vm::ReadModuleHeader(bytes.data()).flatbuffer_size);
  if (const auto* segments = (*module)->def()->segments()) {
    for (const vm::format::SegmentRef* s : *segments) {
      out->protected_ranges.emplace_back(s->offset(), s->offset() + s->length());
    }
  }
  out->bytes = std::move(bytes);
  return true;
}

bool KeepsProtectedBytes(const SealedSeed& seed, const uint8_t* data, size_t size) {
  for (const auto& [begin, end] : seed.protected_ranges) {
    if (end > size) return false;
    if (std::memcmp(seed.bytes.data() + begin, data + begin, end - begin) != 0) return false;
  }
  return true;
}

std::string CheckLoadedMutant(const std::vector<SealedSeed>& seeds, const uint8_t* data,
                              size_t size) {
  for (const SealedSeed& seed : seeds) {
    if (KeepsProtectedBytes(seed, data, size)) return "";
  }
  return "a mutant that changed checksummed bytes of every seed loaded (" +
         std::to_string(size) + " bytes): the integrity check missed a corruption";
}

}  // namespace hexir::fuzz
