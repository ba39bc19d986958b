// libFuzzer entry point over whole modules with integrity checks on. The corpus holds valid
// modules, including ones compiled by hexir-compile with embedded CPU shared objects; the
// seeds named by HEXIR_INTEGRITY_SEEDS (a directory) are the reference for the oracle
// (integrity.h): a mutant that loads must have kept every checksummed byte of one of them,
// otherwise the target aborts. A loaded mutant then runs through the fake-HAL harness.
// Run with -use_cmp=0: told the checksums it compares, libFuzzer would write valid ones into
// the mutant, i.e. forge a module, which the trust model leaves out (vm/README.md).
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/harness.h"
#include "tests/fuzz/integrity.h"
#include "vm/module.h"

namespace {

std::vector<hexir::fuzz::SealedSeed>& Seeds() {
  static std::vector<hexir::fuzz::SealedSeed> seeds;
  return seeds;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("HEXIR_INTEGRITY_SEEDS");
  if (!dir) {
    std::fprintf(stderr, "integrity_fuzzer: set HEXIR_INTEGRITY_SEEDS to the seed directory\n");
    std::abort();
  }
  DIR* d = opendir(dir);
  if (!d) {
    std::fprintf(stderr, "integrity_fuzzer: cannot open '%s'\n", dir);
    std::abort();
  }
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string(dir) + "/" + e->d_name, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    hexir::fuzz::SealedSeed seed;
    if (hexir::fuzz::SealSeed(std::move(bytes), &seed)) Seeds().push_back(std::move(seed));
  }
  closedir(d);
  std::fprintf(stderr, "integrity_fuzzer: %zu seed modules\n", Seeds().size());
  if (Seeds().empty()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto module = hexir::vm::Module::LoadFromMemory(data, size);
  if (!module.ok()) return 0;
  std::string violation = hexir::fuzz::CheckLoadedMutant(Seeds(), data, size);
  if (!violation.empty()) {
    std::fprintf(stderr, "integrity_fuzzer: %s\n", violation.c_str());
    std::abort();
  }
  hexir::fuzz::RunModuleBytes(data, size);
  return 0;
}
