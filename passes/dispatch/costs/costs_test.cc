// hexir-annotate-dispatch-costs / hexir-attach-dispatch-costs on hand-written executables:
// the counts are checked against arithmetic done here (2*M*N*K for a matmul, bytes of the
// operands, body ops x iteration points), dynamic dims give formulas, and attach merges into
// an existing hexir.attrs instead of replacing it; a row inserted in place into an output
// counts as the row's bytes.
#include <catch2/catch.hpp>

#include "compiler/Pipeline.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "passes/dispatch/costs/CostPasses.h"

namespace {

const char* kModule = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
module {
  hexir.executable @mm attributes {hexir.attrs = {"cuda.block_size.mm" = "256,1,1"}} {
    builtin.module {
      func.func @mm(%a: tensor<1x4096xbf16>, %b: tensor<4096x14336xbf16>, %o: tensor<1x14336xf32>) -> tensor<1x14336xf32> {
        %z = arith.constant 0.0 : f32
        %f = linalg.fill ins(%z : f32) outs(%o : tensor<1x14336xf32>) -> tensor<1x14336xf32>
        %c = linalg.matmul ins(%a, %b : tensor<1x4096xbf16>, tensor<4096x14336xbf16>) outs(%f : tensor<1x14336xf32>) -> tensor<1x14336xf32>
        return %c : tensor<1x14336xf32>
      }
    }
  }
  hexir.executable @ew {
    builtin.module {
      func.func @ew(%x: tensor<?x8xf32>, %o: tensor<?x8xf32>) -> tensor<?x8xf32> {
        %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
            ins(%x : tensor<?x8xf32>) outs(%o : tensor<?x8xf32>) {
          ^bb0(%v: f32, %w: f32):
            %m = arith.mulf %v, %v : f32
            %e = math.exp %m : f32
            %t = arith.truncf %e : f32 to f16
            %u = arith.extf %t : f16 to f32
            linalg.yield %u : f32
        } -> tensor<?x8xf32>
        return %g : tensor<?x8xf32>
      }
    }
  }
}
)mlir";

std::string Attr(mlir::Operation* op, const char* dict, const std::string& key) {
  auto d = op->getAttrOfType<mlir::DictionaryAttr>(dict);
  if (!d) return "<no " + std::string(dict) + ">";
  auto s = d.getAs<mlir::StringAttr>(key);
  return s ? s.str() : "<missing " + key + ">";
}

// The dialects hexir-compile registers.
mlir::DialectRegistry Registry() {
  mlir::DialectRegistry registry;
  hexir::compiler::RegisterDialects(registry);
  return registry;
}

// `source` parsed and run through hexir-annotate-dispatch-costs.
mlir::OwningOpRef<mlir::ModuleOp> Annotated(const char* source, mlir::MLIRContext& ctx) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  REQUIRE(module);
  mlir::PassManager pm(&ctx, mlir::ModuleOp::getOperationName());
  pm.addPass(hexir::createAnnotateDispatchCosts());
  REQUIRE(mlir::succeeded(pm.run(*module)));
  return module;
}

TEST_CASE("dispatch costs: static matmul (GEMV), dynamic elementwise, attach merges") {
  mlir::MLIRContext ctx(Registry());
  ctx.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module = Annotated(kModule, ctx);
  auto exes = llvm::to_vector(module->getOps<hexir::ExecutableOp>());
  REQUIRE(exes.size() == 2);
  mlir::Operation* mm = exes[0];
  mlir::Operation* ew = exes[1];
  REQUIRE(Attr(mm, "hexir.costs", "cost.mm.flops") == std::to_string(2LL * 1 * 14336 * 4096));
  REQUIRE(Attr(mm, "hexir.costs", "cost.mm.bytes_read") == std::to_string(2LL * (4096 + 4096LL * 14336)));
  REQUIRE(Attr(mm, "hexir.costs", "cost.mm.bytes_written") == std::to_string(4LL * 14336));
  REQUIRE(Attr(mm, "hexir.costs", "cost.mm.matmul") == "M=1,N=14336,K=4096,B=1,lhs=bf16,rhs=bf16,out=f32");
  REQUIRE(Attr(mm, "hexir.costs", "cost.mm.ops") == "fill,matmul");
  // mulf + exp per element (casts are free); 4 bytes per element each way, rows dynamic.
  REQUIRE(Attr(ew, "hexir.costs", "cost.ew.flops") == "?");
  REQUIRE(Attr(ew, "hexir.costs", "cost.ew.flops.formula") == "16*a0d0");
  REQUIRE(Attr(ew, "hexir.costs", "cost.ew.bytes_read.formula") == "32*a0d0");
  REQUIRE(Attr(ew, "hexir.costs", "cost.ew.bytes_written.formula") == "32*a1d0");
  REQUIRE(Attr(ew, "hexir.costs", "cost.ew.matmul") == "<missing cost.ew.matmul>");

  mlir::PassManager attach(&ctx, mlir::ModuleOp::getOperationName());
  attach.addPass(hexir::createAttachDispatchCosts());
  REQUIRE(mlir::succeeded(attach.run(*module)));
  REQUIRE(!mm->hasAttr("hexir.costs"));
  REQUIRE(Attr(mm, "hexir.attrs", "cuda.block_size.mm") == "256,1,1");
  REQUIRE(Attr(mm, "hexir.attrs", "cost.mm.flops") == std::to_string(2LL * 14336 * 4096));
  REQUIRE(Attr(ew, "hexir.attrs", "cost.ew.ops") == "generic");
}

// A KV-cache row written in place (the llama importer's rotary K row and V row): the cache is
// the tied input (unused by the body) and the output; only the inserted row moves.
const char* kInPlace = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
module {
  hexir.executable @row {
    builtin.module {
      func.func @row(%x: tensor<1x32xf32>, %cache: tensor<512x32xf32>, %o: tensor<512x32xf32>, %pos: index) -> tensor<512x32xf32> {
        %e = tensor.empty() : tensor<1x32xf32>
        %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
            ins(%x : tensor<1x32xf32>) outs(%e : tensor<1x32xf32>) {
          ^bb0(%v: f32, %w: f32):
            %m = arith.mulf %v, %v : f32
            linalg.yield %m : f32
        } -> tensor<1x32xf32>
        %r = tensor.insert_slice %g into %o[%pos, 0] [1, 32] [1, 1] {hexir.in_place} : tensor<1x32xf32> into tensor<512x32xf32>
        return %r : tensor<512x32xf32>
      }
    }
  }
  hexir.executable @two_rows {
    builtin.module {
      func.func @two_rows(%x: tensor<32xf16>, %o: tensor<512x32xf16>, %p: index, %q: index) -> tensor<512x32xf16> {
        %a = tensor.insert_slice %x into %o[%p, 0] [1, 32] [1, 1] : tensor<32xf16> into tensor<512x32xf16>
        %b = tensor.insert_slice %x into %a[%q, 0] [1, 32] [1, 1] : tensor<32xf16> into tensor<512x32xf16>
        return %b : tensor<512x32xf16>
      }
    }
  }
  hexir.executable @into_other {
    builtin.module {
      func.func @into_other(%x: tensor<32xf32>, %c: tensor<512x32xf32>, %o: tensor<512x32xf32>, %p: index) -> tensor<512x32xf32> {
        %a = tensor.insert_slice %x into %c[%p, 0] [1, 32] [1, 1] : tensor<32xf32> into tensor<512x32xf32>
        return %a : tensor<512x32xf32>
      }
    }
  }
}
)mlir";

TEST_CASE("dispatch costs: a row inserted in place moves the row, not the cache") {
  mlir::MLIRContext ctx(Registry());
  ctx.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module = Annotated(kInPlace, ctx);
  auto exes = llvm::to_vector(module->getOps<hexir::ExecutableOp>());
  REQUIRE(exes.size() == 3);
  // The row's 32 floats in and out; the tied cache input is not read.
  CHECK(Attr(exes[0], "hexir.costs", "cost.row.bytes_read") == "128");
  CHECK(Attr(exes[0], "hexir.costs", "cost.row.bytes_written") == "128");
  // Two f16 rows inserted in a chain: 2 x 64 bytes.
  CHECK(Attr(exes[1], "hexir.costs", "cost.two_rows.bytes_written") == "128");
  // Inserted into another tensor (the cache input), returned as the output: the whole output
  // is written (the cache copied), and the cache is read.
  CHECK(Attr(exes[2], "hexir.costs", "cost.into_other.bytes_written") == std::to_string(512 * 32 * 4));
  CHECK(Attr(exes[2], "hexir.costs", "cost.into_other.bytes_read") == std::to_string(128 + 512 * 32 * 4));
}

}  // namespace
