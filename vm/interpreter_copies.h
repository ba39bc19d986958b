// Register-list transfers of the interpreter (internal to vm/interpreter.cc): block-argument
// parallel copies (P operands) and list entries (L operands) read into Variants. An entry with
// kRefBit names a ref register; MOVE on it moves the ref out (a last use) instead of
// retaining it. Header-only so the dispatch loop inlines the common empty copy.
#pragma once

#include <cstdint>
#include <utility>

#include "vm/api.h"
#include "vm/isa.h"
#include "vm/ref.h"

namespace hexir::vm::interpreter {

// Block-argument copy `p` (count, then (source, destination) entries) over the frame's
// registers (v, r): all sources are read (into the scratch sv, sr) before any destination is
// written. The one-pair case needs no scratch.
__attribute__((noinline)) inline void CopyPairs(const uint32_t* p, int64_t* v, Ref<RefObject>* r,
                                                int64_t* sv, Ref<RefObject>* sr) {
  uint32_t n = p[0];
  const uint32_t* e = p + 1;
  if (n == 1) {
    uint32_t s = e[0], d = e[1];
    if (s & kRefBit) {
      r[d & kIndexMask] = RetainOrMove(s & kMoveBit, r[s & kIndexMask]);
    } else {
      v[d] = v[s];
    }
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t s = e[2 * i];
    if (s & kRefBit) {
      sr[i] = RetainOrMove(s & kMoveBit, r[s & kIndexMask]);
    } else {
      sv[i] = v[s];
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t d = e[2 * i + 1];
    if (d & kRefBit) {
      r[d & kIndexMask] = std::move(sr[i]);
    } else {
      v[d] = sv[i];
    }
  }
}

// The common empty copy (a loop back-edge without block arguments) stays inline.
__attribute__((always_inline)) inline void ParallelCopy(const uint32_t* p, int64_t* v,
                                                        Ref<RefObject>* r, int64_t* sv,
                                                        Ref<RefObject>* sr) {
  if (p[0] != 0) CopyPairs(p, v, r, sv, sr);
}

// Copies register `s` of the frame (v, r) into register `d` of the frame (dv, dr): a call's
// argument into the callee, a result back into the caller.
__attribute__((always_inline)) inline void CopyEntry(uint32_t s, uint32_t d, int64_t* v,
                                                     Ref<RefObject>* r, int64_t* dv,
                                                     Ref<RefObject>* dr) {
  if (s & kRefBit) {
    dr[d & kIndexMask] = RetainOrMove(s & kMoveBit, r[s & kIndexMask]);
  } else {
    dv[d] = v[s];
  }
}

// Reads list entry `e` of the frame (v, r) into a Variant: refs moved with MOVE, else retained.
__attribute__((always_inline)) inline void ReadEntry(uint32_t e, int64_t* v, Ref<RefObject>* r,
                                                     Variant* out) {
  if (e & kRefBit) {
    out->ref = RetainOrMove(e & kMoveBit, r[e & kIndexMask]);
  } else {
    out->bits = v[e];
  }
}

// Writes a Variant into list entry `e` of the frame (v, r), moving its ref.
__attribute__((always_inline)) inline void WriteEntry(uint32_t e, Variant& in, int64_t* v,
                                                      Ref<RefObject>* r) {
  if (e & kRefBit) {
    r[e & kIndexMask] = std::move(in.ref);
  } else {
    v[e] = in.bits;
  }
}

}  // namespace hexir::vm::interpreter
