// Dispatch cost metadata written by the compiler (passes/dispatch/costs): per executable
// entry, bytes read/written, FLOPs, the linalg ops and, for contractions, the matmul shape.
// Read from a module's executable attrs "cost.<entry>.<field>".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/hexir-bench/collector.h"
#include "vm/module.h"

namespace hexir::tools::bench {

struct MatmulShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;  // 0: not static
  std::string lhs, rhs, out;              // element types ("f32", "bf16", ...)
  bool is_static() const { return m > 0 && n > 0 && k > 0 && batch > 0; }
  std::string ToString() const;           // "1x4096x14336 bf16" (MxNxK, batch when > 1)
};

struct DispatchCost {
  double bytes_read = -1;     // -1: unknown (dynamic; see formula)
  double bytes_written = -1;
  double flops = -1;
  std::string ops;            // "fill,matmul,generic"
  std::string formula;        // formulas of unknown fields, "bytes_read=..; flops=.."
  // The same over the dispatch's parameter words ("cost.<entry>.<field>.words"), which the
  // CPU driver reports with each dispatch (DispatchEvent::words); empty where absent.
  std::string bytes_read_words, bytes_written_words, flops_words;
  bool has_matmul = false;
  MatmulShape matmul;
  bool bytes_known() const { return bytes_read >= 0 && bytes_written >= 0; }
};

// The fields a run-time shape left unknown (-1) in `cost`, as their mean over `events` (the
// cost's entry's dispatches), evaluated from each event's parameter words; a field stays
// unknown unless every event gives it (no words, or words a formula cannot use).
void EvaluateRunTimeCosts(const std::vector<const DispatchEvent*>& events, DispatchCost* cost);

// By entry name. Executables without cost attrs are absent.
std::map<std::string, DispatchCost> ReadDispatchCosts(const vm::Module& module);

// Parses "M=1,N=4096,K=4096,B=1,lhs=bf16,rhs=bf16,out=f32"; "?" extents parse as 0.
StatusOr<MatmulShape> ParseMatmul(const std::string& text);

}  // namespace hexir::tools::bench
