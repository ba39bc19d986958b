// Calls between functions of a module and into native modules (internal to
// vm/interpreter.cc, which includes this once): the Interpreter members that push and pop
// frames on the heap stacks and that pass values to an import. Header-only so the dispatch
// loop inlines them and keeps its Activation in machine registers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "vm/interpreter.h"
#include "vm/interpreter_copies.h"

namespace hexir::vm {

namespace interpreter {
template <typename T>
inline void GrowTo(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(std::max(n, v.size() * 2));
}
}  // namespace interpreter

// call F, L(args), L(results): the callee's registers start right after the caller's;
// arguments go to V0, V1, ... and R0, R1, ... in list order, the other value registers are 0.
__attribute__((always_inline)) inline Status Interpreter::EnterCall(const FunctionInfo* fns,
                                                                    Activation& at,
                                                                    CallStack& stack,
                                                                    const uint32_t*& ip) {
  using interpreter::GrowTo;
  if (__builtin_expect(stack.depth == stack.capacity, 0)) {
    // Capacities are powers of two from 64, so this trips exactly at kMaxCallDepth.
    if (stack.depth >= kMaxCallDepth) {
      return ResourceExhausted("call stack overflow (", kMaxCallDepth, " nested calls)");
    }
    frames_.resize(stack.capacity * 2);
    stack.frames = frames_.data();
    stack.capacity = frames_.size();
  }
  uint32_t callee_ordinal = ip[1];
  const FunctionInfo* callee = &fns[callee_ordinal];
  size_t new_value_base = at.value_base + at.fn->value_register_count;
  size_t new_ref_base = at.ref_base + at.fn->ref_register_count;
  if (new_value_base + callee->value_register_count > kMaxRegisterStack ||
      new_ref_base + callee->ref_register_count > kMaxRegisterStack) {
    return ResourceExhausted("register stack exhausted (", kMaxRegisterStack,
                             " registers per bank)");
  }
  if (new_value_base + callee->value_register_count > values_.size()) {
    GrowTo(values_, new_value_base + callee->value_register_count);
    at.v = values_.data() + at.value_base;
  }
  if (new_ref_base + callee->ref_register_count > refs_.size()) {
    GrowTo(refs_, new_ref_base + callee->ref_register_count);
    at.r = refs_.data() + at.ref_base;
  }
  int64_t* nv = values_.data() + new_value_base;
  Ref<RefObject>* nr = refs_.data() + new_ref_base;
  const uint32_t* args = ip + 2;
  uint32_t n = args[0], vi = 0, ri = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t e = args[1 + i];
    if (e & kRefBit) {
      nr[ri++] = RetainOrMove(e & kMoveBit, at.r[e & kIndexMask]);
    } else {
      nv[vi++] = at.v[e];
    }
  }
  // Registers past the arguments start at 0 (a short loop: memset's call costs more).
  for (uint32_t i = vi; i < callee->value_register_count; ++i) nv[i] = 0;
  stack.frames[stack.depth++] = Frame{at.function, ip, args + 1 + n, at.value_base, at.ref_base};
  at.function = callee_ordinal;
  at.fn = callee;
  at.code = ip = callee->code;
  at.value_base = new_value_base;
  at.ref_base = new_ref_base;
  at.v = nv;
  at.r = nr;
  return Status::Ok();
}

// return L: the results go to the caller's call-result list (return_ip).
__attribute__((always_inline)) inline void Interpreter::ReturnToCaller(const FunctionInfo* fns,
                                                                       Activation& at,
                                                                       CallStack& stack,
                                                                       const uint32_t*& ip) {
  const uint32_t* list = ip + 1;
  uint32_t n = list[0];
  const Frame frame = stack.frames[--stack.depth];
  int64_t* cv = values_.data() + frame.value_base;
  Ref<RefObject>* cr = refs_.data() + frame.ref_base;
  const uint32_t* dst = frame.return_ip;
  for (uint32_t i = 0; i < n; ++i)
    interpreter::CopyEntry(list[1 + i], dst[1 + i], at.v, at.r, cv, cr);
  for (uint32_t i = 0; i < at.fn->ref_register_count; ++i) at.r[i].reset();
  at.function = frame.function;
  at.fn = &fns[at.function];
  at.code = at.fn->code;
  ip = dst + 1 + n;
  at.value_base = frame.value_base;
  at.ref_base = frame.ref_base;
  at.v = cv;
  at.r = cr;
}

// call.import M, L(args), L(results): arguments are read into the import scratch (refs
// retained, or moved with MOVE) and cleared after the call; results are moved into place.
__attribute__((always_inline)) inline Status Interpreter::CallImport(const LinkedModule& linked,
                                                                     const Activation& at,
                                                                     const Interrupt& interrupt,
                                                                     const uint32_t*& ip) {
  const Module& module = *linked.module;
  uint32_t m = ip[1];
  const ImportInfo& info = module.imports()[m];
  const uint32_t* args = ip + 2;
  uint32_t n = args[0];
  Variant* a = import_args_.data();
  for (uint32_t i = 0; i < n; ++i) interpreter::ReadEntry(args[1 + i], at.v, at.r, &a[i]);
  const uint32_t* res = args + 1 + n;
  uint32_t k = res[0];
  Variant* out = import_results_.data();
  for (uint32_t i = 0; i < k; ++i) {
    out[i].bits = 0;
    out[i].ref.reset();
  }
  NativeCall call;
  call.caller = &module;
  call.import_name = info.name;
  call.signature = info.signature;
  call.args = Span<Variant>(a, n);
  call.results = Span<Variant>(out, k);
  call.interrupt = &interrupt;
  Status status = linked.imports[m].function->call(*linked.imports[m].state, call);
  for (uint32_t i = 0; i < n; ++i) a[i].ref.reset();
  if (!status.ok()) return std::move(status).WithContext(info.name);
  for (uint32_t i = 0; i < k; ++i) interpreter::WriteEntry(res[1 + i], out[i], at.v, at.r);
  ip = res + 1 + k;
  return Status::Ok();
}

}  // namespace hexir::vm
