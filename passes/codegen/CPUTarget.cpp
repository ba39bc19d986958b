// Vector width from LLVM's feature tables (so a cross-compiled module never uses registers
// its CPU lacks); cache sizes from sysconf on the host only.
#include "passes/codegen/CPUTarget.h"

#include <unistd.h>

#include <memory>
#include <string>

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace hexir::codegen {

CPUTarget DescribeCPU(llvm::StringRef cpu) {
  CPUTarget target;
  bool avx512 = false, avx2 = false, vnni = false;
  if (cpu == "host") {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    avx512 = features.lookup("avx512f") && features.lookup("avx512bw");
    avx2 = features.lookup("avx2") && features.lookup("fma");
    vnni = features.lookup("avx512vnni");
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l1 > 0) target.l1Bytes = l1;
    if (l2 > 0) target.l2Bytes = l2;
  } else {
    llvm::InitializeNativeTarget();
    std::string triple = llvm::sys::getDefaultTargetTriple(), error;
    const llvm::Target* llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
    std::unique_ptr<llvm::MCSubtargetInfo> info(
        llvmTarget ? llvmTarget->createMCSubtargetInfo(llvm::Triple(triple), cpu, "") : nullptr);
    if (info) {
      avx512 = info->checkFeatures("+avx512f,+avx512bw");
      avx2 = info->checkFeatures("+avx2,+fma");
      vnni = info->checkFeatures("+avx512vnni");
    }
  }
  // 512 bits only with AVX512BW: the int8 matvec dots use its byte multiply-adds (a Xeon Phi's
  // AVX512F alone describes as AVX2).
  if (avx512) {
    target.vectorBits = 512;
    target.vectorRegisters = 32;
    target.int8DotAccumulate = vnni;
  } else if (avx2) {
    target.vectorBits = 256;
  }
  return target;
}

bool IsKnownCPU(llvm::StringRef cpu) {
  if (cpu == "host") return true;
  llvm::InitializeNativeTarget();
  std::string triple = llvm::sys::getDefaultTargetTriple(), error;
  const llvm::Target* llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget) return false;
  std::unique_ptr<llvm::MCSubtargetInfo> info(llvmTarget->createMCSubtargetInfo(llvm::Triple(triple), "", ""));
  return info && info->isCPUStringValid(cpu);
}

}  // namespace hexir::codegen
