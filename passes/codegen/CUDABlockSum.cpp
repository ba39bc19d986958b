// A block-wide f32 sum (CUDABlockSum.h).
#include "passes/codegen/CUDABlockSum.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDAWarpReduce.h"

namespace hexir::cuda {
using namespace mlir;

Value EmitBlockSum(OpBuilder& b, Location loc, func::FuncOp kernel, Value tid, int64_t threads, int64_t K,
                   llvm::function_ref<SmallVector<Value>(Value at)> load,
                   llvm::function_ref<Value(ValueRange loaded)> term) {
  auto idx = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  const int64_t T = threads, steps = (K + T - 1) / T;
  const int64_t unroll = std::min<int64_t>(steps, 8), chunks = (steps + unroll - 1) / unroll;
  // Steps [first, first + unroll T) of the thread (first: thread 0's first step of the chunk),
  // added to `sum`. `known`: first is 0 (one chunk: the steps past K are known at compile time).
  auto chunk = [&](Value first, Value sum, bool known) -> Value {
    SmallVector<std::pair<Value, SmallVector<Value>>> loaded;  // (in range or null: always, loads)
    for (int64_t i = 0; i < unroll; ++i) {
      if (known && i * T >= K) break;
      Value at = arith::AddIOp::create(b, loc, arith::AddIOp::create(b, loc, first, tid), idx(i * T));
      const bool inside = known && (i + 1) * T <= K;
      Value valid;
      if (!inside) {
        valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, at, idx(K));
        at = arith::MinUIOp::create(b, loc, at, idx(K - 1));
      }
      loaded.push_back({valid, load(at)});
    }
    for (auto& [valid, values] : loaded) {
      Value t = term(values);
      if (valid) t = arith::SelectOp::create(b, loc, valid, t, zero);
      sum = arith::AddFOp::create(b, loc, sum, t);
    }
    return sum;
  };
  Value partial;
  if (chunks == 1) {
    partial = chunk(idx(0), zero, /*known=*/true);
  } else {
    auto loop = scf::ForOp::create(b, loc, idx(0), idx(chunks * unroll * T), idx(unroll * T), ValueRange{zero});
    {
      OpBuilder::InsertionGuard guard(b);
      Block* body = loop.getBody();
      if (body->mightHaveTerminator()) body->getTerminator()->erase();
      b.setInsertionPointToEnd(body);
      Value sum = chunk(loop.getInductionVar(), loop.getRegionIterArgs()[0], /*known=*/false);
      scf::YieldOp::create(b, loc, ValueRange{sum});
    }
    partial = loop.getResult(0);
  }
  partial = cuda::XorButterfly(b, loc, partial, cuda::kWarpSize,
                               [&](Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); });
  const int64_t warps = T / 32;
  Value shared = WorkgroupArray(b, loc, kernel, b.getF32Type(), warps);
  Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
    memref::StoreOp::create(b, loc, partial, shared, ValueRange{warp});
  }
  gpu::BarrierOp::create(b, loc);
  Value total;
  for (int64_t w = 0; w < warps; ++w) {
    Value v = memref::LoadOp::create(b, loc, shared, ValueRange{idx(w)});
    total = total ? Value(arith::AddFOp::create(b, loc, total, v)) : v;
  }
  return total;
}

}  // namespace hexir::cuda
