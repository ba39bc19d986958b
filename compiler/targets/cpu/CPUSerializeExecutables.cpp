// Compiles each executable's LLVM-dialect module to an ELF shared object: translate to
// LLVM IR, set the host triple and data layout, optimize at O3, emit a PIC object, and
// link it with `<linker option> -shared` (GNU ld by default: its link costs ~24 ms of CPU against
// ld.lld's ~85, which maps and relocates libLLVM at start-up; a link runs per executable)
// on temporary files that are deleted afterwards. Executables are compiled concurrently on
// the MLIR context's threads (one by one in module order when it is single-threaded).
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Threading.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_CPUSERIALIZEEXECUTABLES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

class CPUSerializeExecutables
    : public impl::CPUSerializeExecutablesBase<CPUSerializeExecutables> {
 public:
  using CPUSerializeExecutablesBase::CPUSerializeExecutablesBase;

  void runOnOperation() override {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // serialize() touches only its executable and what it creates (an LLVMContext, a target
    // machine, temporary files); diagnostics come out in module order (failableParallelForEach).
    SmallVector<ExecutableOp> executables;
    for (auto exe : getOperation().getOps<ExecutableOp>())
      if (exe.isCompiledFor("cpu")) executables.push_back(exe);
    if (failed(failableParallelForEach(&getContext(), executables, [&](ExecutableOp exe) { return serialize(exe); })))
      signalPassFailure();
  }

 private:
  std::unique_ptr<llvm::TargetMachine> createTargetMachine(ExecutableOp exe) {
    std::string triple = llvm::sys::getDefaultTargetTriple();
    std::string error;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target) {
      exe.emitError("no LLVM target for ") << triple << ": " << error;
      return nullptr;
    }
    std::string cpuName = cpu == "host" ? llvm::sys::getHostCPUName().str() : cpu;
    std::string features;
    if (cpu == "host") {
      for (const auto& f : llvm::sys::getHostCPUFeatures())
        features += (f.second ? "+" : "-") + f.first().str() + ",";
    }
    llvm::TargetOptions options;
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        llvm::Triple(triple), cpuName, features, options, llvm::Reloc::PIC_, std::nullopt,
        llvm::CodeGenOptLevel::Aggressive));
    if (!tm) exe.emitError("cannot create a target machine for ") << triple;
    return tm;
  }

  LogicalResult serialize(ExecutableOp exe) {
    ModuleOp inner = exe.getInnerModule();
    if (!inner) return exe.emitError("executable has no module to serialize");
    std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(exe);
    if (!tm) return failure();
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> module =
        translateModuleToLLVMIR(inner, llvmContext, exe.getSymName());
    if (!module) return exe.emitError("translation to LLVM IR failed");
    module->setTargetTriple(tm->getTargetTriple());
    module->setDataLayout(tm->createDataLayout());
    if (llvm::Error err = makeOptimizingTransformer(3, 0, tm.get())(module.get()))
      return exe.emitError("LLVM optimization failed: ") << llvm::toString(std::move(err));

    llvm::SmallString<128> objPath, soPath;
    int objFd;
    if (llvm::sys::fs::createTemporaryFile("hexir-kernel", "o", objFd, objPath) ||
        llvm::sys::fs::createTemporaryFile("hexir-kernel", "so", soPath))
      return exe.emitError("cannot create temporary files");
    auto cleanup = llvm::make_scope_exit([&] {
      llvm::sys::fs::remove(objPath);
      llvm::sys::fs::remove(soPath);
    });
    {
      llvm::raw_fd_ostream os(objFd, /*shouldClose=*/true);
      llvm::legacy::PassManager pm;
      if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
        return exe.emitError("the target cannot emit object files");
      pm.run(*module);
    }
    std::string errorMessage;
    // Kernels may call libc (memcpy, memset, malloc, free), libm (expf, ...) and, on CPUs
    // without F16C, libgcc_s's f16 conversions (__extendhfsf2, __truncsfhf2): record them as
    // dependencies when present. Linked against libc, a call binds to the versioned default
    // (memcpy@GLIBC_2.14, the CPU-dispatched one); unversioned, glibc's loader binds it to the
    // oldest version, memcpy@GLIBC_2.2.5, an SSE2 copy without the AVX2/AVX-512 choice.
    // bf16 conversions never reach LLVM (hexir-cpu-lower-executables expands them).
    // Flags both GNU ld and ld.lld take, set to ld.lld's defaults: the stack is never
    // executable; code is not padded into pages of its own (GNU ld's default, which made each
    // kernel's file 2.5x larger).
    llvm::SmallVector<llvm::StringRef> args = {linker, "-shared", "-z", "noexecstack", "-z", "noseparate-code",
                                               "--hash-style=gnu", "-o", soPath, objPath};
    for (const char* library :
         {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
          "/lib/x86_64-linux-gnu/libgcc_s.so.1"})
      if (llvm::sys::fs::exists(library)) args.append({"--as-needed", library});
    int rc = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, {}, 0, 0, &errorMessage);
    if (rc != 0)
      return exe.emitError("linking with ") << linker << " failed (exit " << rc << ") " << errorMessage;
    auto buffer = llvm::MemoryBuffer::getFile(soPath);
    if (!buffer) return exe.emitError("cannot read the linked shared object");

    OpBuilder b(exe);
    exe->setAttr(kFormatAttr, b.getStringAttr("cpu-elf-x86_64"));
    exe->setAttr(kEntryAttr, b.getStringAttr(exe.getSymName()));
    exe->setAttr(kBinaryAttr, b.getStringAttr((*buffer)->getBuffer()));
    inner.erase();
    return success();
  }
};

}  // namespace
}  // namespace hexir
