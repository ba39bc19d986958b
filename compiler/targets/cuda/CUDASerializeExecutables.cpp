// Serializes each lowered CUDA executable: the gpu.module goes through MLIR's NVVM target
// (gpu-module-to-binary, format=isa) to PTX, with libdevice linked when the kernel calls
// __nv_* math functions; the PTX is then assembled by the toolkit's ptxas into a cubin in
// a subprocess on temporary files deleted afterwards. ptxas is run here rather than by
// MLIR so that a missing toolkit gives one clear error naming the path that was tried.
#include <cstdlib>

#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/codegen/CUDAPasses.h"

namespace hexir {
#define GEN_PASS_DEF_CUDASERIALIZEEXECUTABLES
#include "passes/codegen/CUDAPasses.h.inc"

namespace {
using namespace mlir;

class CUDASerializeExecutables
    : public impl::CUDASerializeExecutablesBase<CUDASerializeExecutables> {
 public:
  using CUDASerializeExecutablesBase::CUDASerializeExecutablesBase;

  void runOnOperation() override {
    if (format != "cubin" && format != "ptx") {
      getOperation().emitError("unknown CUDA format '") << format << "' (expected cubin or ptx)";
      return signalPassFailure();
    }
    root = toolkitRoot();
    for (auto exe : getOperation().getOps<ExecutableOp>())
      if (exe.isCompiledFor("cuda") && failed(serialize(exe))) return signalPassFailure();
  }

 private:
  std::string toolkitRoot() const {
    if (!toolkit.empty()) return toolkit;
    if (const char* home = std::getenv("CUDA_HOME"); home && *home) return home;
    return "/usr/local/cuda";
  }

  static bool callsLibdevice(gpu::GPUModuleOp module) {
    for (auto f : module.getOps<LLVM::LLVMFuncOp>())
      if (f.isExternal() && f.getSymName().starts_with("__nv_")) return true;
    return false;
  }

  FailureOr<std::string> toPTX(ExecutableOp exe, ModuleOp inner, gpu::GPUModuleOp module) {
    std::string options = "format=isa toolkit=" + root;
    if (callsLibdevice(module)) {
      llvm::SmallString<256> libdevice(root);
      llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
      if (!llvm::sys::fs::exists(libdevice))
        return exe.emitError("CUDA libdevice not found at ")
               << libdevice << " (needed for math functions; set CUDA_HOME to the toolkit)";
      options += " l=" + libdevice.str().str();
    }
    FailureOr<OpPassManager> pm =
        parsePassPipeline("builtin.module(gpu-module-to-binary{" + options + "})");
    if (failed(pm)) return exe.emitError("bad internal pipeline");
    if (failed(runPipeline(*pm, inner))) return exe.emitError("PTX generation failed");
    auto binary = inner.lookupSymbol<gpu::BinaryOp>(exe.getSymName());
    if (!binary || binary.getObjects().size() != 1)
      return exe.emitError("PTX generation produced no gpu.binary");
    auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    return object.getObject().getValue().str();
  }

  FailureOr<std::string> toCubin(ExecutableOp exe, StringRef ptx, StringRef chip) {
    llvm::SmallString<256> ptxas(root);
    llvm::sys::path::append(ptxas, "bin", "ptxas");
    if (!llvm::sys::fs::can_execute(ptxas))
      return exe.emitError("CUDA toolkit not found: no ptxas at ")
             << ptxas << " (set CUDA_HOME to the toolkit, or use --cuda-format=ptx)";
    llvm::SmallString<128> ptxPath, cubinPath, logPath;
    int ptxFd;
    if (llvm::sys::fs::createTemporaryFile("hexir-kernel", "ptx", ptxFd, ptxPath) ||
        llvm::sys::fs::createTemporaryFile("hexir-kernel", "cubin", cubinPath) ||
        llvm::sys::fs::createTemporaryFile("hexir-ptxas", "log", logPath))
      return exe.emitError("cannot create temporary files");
    llvm::scope_exit cleanup([&] {
      llvm::sys::fs::remove(ptxPath);
      llvm::sys::fs::remove(cubinPath);
      llvm::sys::fs::remove(logPath);
    });
    {
      llvm::raw_fd_ostream os(ptxFd, /*shouldClose=*/true);
      os << ptx.rtrim('\0');
    }
    std::string arch = ("-arch=" + chip).str();
    llvm::SmallVector<StringRef> args = {ptxas, arch, "-O3", ptxPath, "-o", cubinPath};
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath), StringRef(logPath)};
    std::string errorMessage;
    int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &errorMessage);
    if (rc != 0) {
      std::string log;
      if (auto buffer = llvm::MemoryBuffer::getFile(logPath)) log = (*buffer)->getBuffer().str();
      return exe.emitError("ptxas failed (exit ") << rc << ") " << errorMessage << ": " << log;
    }
    auto buffer = llvm::MemoryBuffer::getFile(cubinPath);
    if (!buffer) return exe.emitError("cannot read the cubin written by ptxas");
    return (*buffer)->getBuffer().str();
  }

  // True when every path through the entry executes griddepcontrol.wait (the intrinsic, or
  // the lowering's inline PTX, kGridDependencyWaitAsm) before any memory
  // access: before it only launch_dependents, L2 prefetches (hints, not accesses: the
  // lowering's weight rows), copies into shared memory and L1 prefetches of bindings no
  // dispatch writes (`readOnly`: a one-block kernel's staged weights, CUDAStagedWeights.h),
  // branches and ops free of memory effects. No access before its prerequisite kernels
  // completed to memory they may write is what a programmatic edge into it requires.
  static bool entryWaitsFirst(gpu::GPUModuleOp module, StringRef name, ArrayRef<int64_t> readOnly) {
    auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!entry || entry.getBody().empty()) return false;
    // Whether `p` (through address-space casts and GEPs) points into a read-only binding.
    auto intoReadOnly = [&](Value p) {
      while (Operation* def = p.getDefiningOp()) {
        if (auto cast = dyn_cast<LLVM::AddrSpaceCastOp>(def)) p = cast.getArg();
        else if (auto gep = dyn_cast<LLVM::GEPOp>(def)) p = gep.getBase();
        else return false;
      }
      auto arg = cast<BlockArgument>(p);
      return arg.getOwner() == &entry.getBody().front() &&
             llvm::is_contained(readOnly, int64_t(arg.getArgNumber()));
    };
    SmallVector<Block*> work = {&entry.getBody().front()};
    llvm::SmallPtrSet<Block*, 4> seen = {work.front()};
    while (!work.empty()) {
      Block* block = work.pop_back_val();
      bool waited = false;
      for (Operation& op : *block) {
        if (auto control = dyn_cast<NVVM::GriddepcontrolOp>(op)) {
          if ((waited = control.getKind() == NVVM::GridDepActionKind::wait)) break;
          continue;
        }
        if (auto wait = dyn_cast<LLVM::InlineAsmOp>(op); wait && wait.getAsmString() == kGridDependencyWaitAsm &&
                                                           wait.getHasSideEffects()) {
          waited = true;
          break;
        }
        if (isa<NVVM::CpAsyncBulkPrefetchOp, NVVM::CpAsyncCommitGroupOp>(op)) continue;
        if (auto copy = dyn_cast<NVVM::CpAsyncOp>(op); copy && intoReadOnly(copy.getSrc())) continue;
        if (auto line = dyn_cast<NVVM::PrefetchOp>(op); line && intoReadOnly(line.getAddr())) continue;
        if (isa<LLVM::BrOp, LLVM::CondBrOp>(op)) {
          for (Block* next : op.getSuccessors())
            if (seen.insert(next).second) work.push_back(next);
          continue;
        }
        if (!isMemoryEffectFree(&op) || op.getNumRegions() != 0) return false;
      }
      if (!waited && block->getSuccessors().empty()) return false;  // returned without waiting
    }
    return true;
  }

  LogicalResult serialize(ExecutableOp exe) {
    ModuleOp inner = exe.getInnerModule();
    if (!inner) return exe.emitError("executable has no module to serialize");
    auto module = inner.lookupSymbol<gpu::GPUModuleOp>(exe.getSymName());
    if (!module) return exe.emitError("executable has no gpu.module (run hexir-cuda-lower-executables)");
    auto block = exe->getAttrOfType<DenseI64ArrayAttr>(kBlockSizeAttr);
    if (!block || block.size() != 3) return exe.emitError("executable has no ") << kBlockSizeAttr;
    auto readOnly = exe->getAttrOfType<DenseI64ArrayAttr>("hexir.cuda.read_only_bindings");
    const bool waitsFirst =
        entryWaitsFirst(module, exe.getSymName(), readOnly ? readOnly.asArrayRef() : ArrayRef<int64_t>());
    FailureOr<std::string> ptx = toPTX(exe, inner, module);
    if (failed(ptx)) return failure();
    // ptxas and the driver's JIT read NUL-terminated text.
    std::string ptxText = *ptx;
    if (ptxText.empty() || ptxText.back() != '\0') ptxText.push_back('\0');

    OpBuilder b(exe);
    std::string entry = exe.getSymName().str();
    std::string blockText = std::to_string(block[0]) + "," + std::to_string(block[1]) + "," +
                            std::to_string(block[2]);
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr("cuda.block_size." + entry, b.getStringAttr(blockText))};
    std::string exeChip = chip;
    if (auto own = exe->getAttrOfType<StringAttr>(kExecutableChipAttr)) exeChip = own.str();
    if (auto shared = exe->getAttrOfType<IntegerAttr>(kSharedBytesAttr))
      attrs.push_back(b.getNamedAttr("cuda.shared_bytes." + entry,
                                     b.getStringAttr(std::to_string(shared.getInt()))));
    // Bindings no dispatch of the program writes (hexir-cuda-lower-executables), e.g. "1,2".
    if (readOnly) {
      std::string list;
      for (int64_t binding : readOnly.asArrayRef()) list += (list.empty() ? "" : ",") + std::to_string(binding);
      attrs.push_back(b.getNamedAttr("cuda.read_only_bindings." + entry, b.getStringAttr(list)));
    }
    // The driver makes programmatic (PDL) graph edges only into kernels that wait first.
    if (waitsFirst)
      attrs.push_back(b.getNamedAttr("cuda.programmatic_wait." + entry, b.getStringAttr("1")));
    // The CUDA driver (hal/drivers/cuda/cuda_executable.h) JIT-loads the "cuda.ptx" attr
    // when the cubin does not load; its ExecutableView has no access to rodata, so the
    // PTX is inline there as well as in the cuda.ptx_segment rodata segment.
    if (format != "ptx") attrs.push_back(b.getNamedAttr("cuda.ptx", b.getStringAttr(StringRef(*ptx).rtrim('\0'))));
    exe->setAttr(kExecutableAttrsAttr, b.getDictionaryAttr(attrs));
    if (format == "ptx") {
      exe->setAttr(kFormatAttr, b.getStringAttr("cuda-ptx"));
      exe->setAttr(kBinaryAttr, b.getStringAttr(ptxText));
    } else {
      FailureOr<std::string> cubin = toCubin(exe, ptxText, exeChip);
      if (failed(cubin)) return failure();
      exe->setAttr(kFormatAttr, b.getStringAttr("cuda-cubin-" + exeChip));
      exe->setAttr(kBinaryAttr, b.getStringAttr(*cubin));
      exe->setAttr(kRodataAttrsAttr,
                   b.getDictionaryAttr({b.getNamedAttr("cuda.ptx_segment", b.getStringAttr(ptxText))}));
    }
    exe->setAttr(kEntryAttr, b.getStringAttr(entry));
    exe->removeAttr(kBlockSizeAttr);
    exe->removeAttr(kExecutableChipAttr);
    exe->removeAttr(kSharedBytesAttr);
    exe->removeAttr("hexir.cuda.read_only_bindings");
    inner.erase();
    return success();
  }

  std::string root;
};

}  // namespace
}  // namespace hexir
