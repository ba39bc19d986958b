#include "vm/interpreter.h"

// Keep one indirect jump per handler (GCC otherwise merges the handlers' identical dispatch
// tails into one shared jump, which predicts far worse).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-crossjumping")
#endif

#include <algorithm>
#include <limits>
#include <utility>

#include "vm/interpreter_calls.h"
#include "vm/interpreter_copies.h"
#include "vm/interpreter_lists.h"
#include "vm/interpreter_scalars.h"
#include "vm/interpreter_traps.h"
#include "vm/isa.h"

// The dispatch loop: one label per opcode, each a line or a call of its group's inline
// helpers: scalar arithmetic (interpreter_scalars.h), block-argument copies
// (interpreter_copies.h), calls and imports (interpreter_calls.h), lists
// (interpreter_lists.h), traps (interpreter_traps.h).
namespace hexir::vm {

using namespace interpreter;

Status Interpreter::Invoke(LinkedModule& linked, uint32_t ordinal, Span<Variant> args,
                           std::vector<Variant>* results, uint64_t fuel,
                           const Interrupt& interrupt, ContextStats* stats) {
  const Module& module = *linked.module;
  const FunctionInfo& fn = module.functions()[ordinal];
  if (args.size() != fn.kinds.args.size()) {
    return InvalidArgument("function '", fn.name, "' (signature '", fn.signature, "') takes ",
                           fn.kinds.args.size(), " arguments, got ", args.size());
  }
  GrowTo(values_, std::max<size_t>(fn.value_register_count, 256));
  GrowTo(refs_, std::max<size_t>(fn.ref_register_count, 256));
  std::fill(values_.begin(), values_.begin() + fn.value_register_count, 0);
  size_t vi = 0, ri = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (fn.kinds.args[i] == 'r') {
      refs_[ri++] = args[i].ref;
    } else {
      values_[vi++] = args[i].bits;
    }
  }
  GrowTo(copy_values_, module.max_copy_pairs());
  GrowTo(copy_refs_, module.max_copy_pairs());
  GrowTo(import_args_, module.max_import_args());
  GrowTo(import_results_, module.max_import_results());
  // Run keeps the call depth in a local and uses frames_ as sized storage (grown by doubling).
  if (frames_.size() < 64) frames_.resize(64);
  results->clear();
  results->resize(fn.kinds.results.size());
  Status status = Run(linked, ordinal, results, fuel, interrupt, stats);
  if (!status.ok()) {
    Unwind();
    results->clear();
  }
  return status;
}

void Interpreter::Unwind() {
  for (Ref<RefObject>& r : refs_) r.reset();
  for (Variant& a : import_args_) a.ref.reset();
  for (Variant& a : import_results_) a.ref.reset();
  for (Ref<RefObject>& r : copy_refs_) r.reset();
}

// The handler shapes of Run's dispatch loop. They name Run's locals: `ip` (the instruction),
// `at` (the running function and its registers), `executed`, `trap`, the fuel and interrupt
// bounds and the parallel-copy scratch; the V operands are VA, VB, VC.
#define NEXT()                                \
  do {                                        \
    ++executed;                               \
    goto* dispatch[*ip & kOpcodeMask];        \
  } while (0)
#define VA at.v[ip[1]]
#define VB at.v[ip[2]]
#define VC at.v[ip[3]]
#define RIDX(i) (ip[i] & kIndexMask)
#define TRAP(status) \
  do {               \
    trap = (status); \
    goto trapped;    \
  } while (0)
// Runs a Status-returning call; a failure traps (with the op's mnemonic for TRY_OP). The
// Status lives in its own scope: no object with a destructor may be live across the indirect
// `goto` of NEXT (clang rejects it; handlers scope such objects the same way).
#define TRY(expr)                                            \
  do {                                                       \
    Status try_status_ = (expr);                             \
    if (!try_status_.ok()) TRAP(std::move(try_status_));     \
  } while (0)
#define TRY_OP(expr)                                         \
  do {                                                       \
    Status try_status_ = (expr);                             \
    if (!try_status_.ok()) TRAP(OpError(ip, try_status_));   \
  } while (0)
#define FUEL_CHECK()                                                          \
  if (__builtin_expect(executed >= next_check, 0)) {                          \
    if (executed >= fuel_limit) goto out_of_fuel;                             \
    if (Interrupted(interrupt, &trap)) goto trapped;                          \
    next_check = std::min(fuel_limit, executed + kInterruptCheckInstructions); \
  }
// Jumps to T after copying P (a taken branch).
#define JUMP(t, p)                                      \
  do {                                                  \
    ParallelCopy(p, at.v, at.r, copy_values, copy_refs); \
    ip = at.code + (t);                                  \
  } while (0)
// Ops writing V[a] from V[b] (UNARY, 3 words) or from V[b] and V[c] (4 words).
#define UNARY(Name, expr) \
  op_##Name:              \
  VA = (expr);            \
  ip += 3;                \
  NEXT();
#define BINARY(Name, expr)  \
  op_##Name : {             \
    int64_t b = VB, c = VC; \
    VA = (expr);            \
    ip += 4;                \
    NEXT();                 \
  }
#define BINARY_F64(Name, expr)           \
  op_##Name : {                          \
    double b = AsF64(VB), c = AsF64(VC); \
    VA = (expr);                         \
    ip += 4;                             \
    NEXT();                              \
  }
// Division and remainder (ISA: traps on a zero divisor and on INT_MIN / -1, like kernels).
// The operands are read at the op's width (an i32 op truncates hostile i64 registers first),
// so the C++ division below never overflows.
#define SIGNED_DIVISION(Name, T, expr)                                           \
  op_##Name : {                                                                  \
    T b = static_cast<T>(VB), c = static_cast<T>(VC);                            \
    if (__builtin_expect(SignedDivisionTraps(b, c), 0)) TRAP(DivisionTrap(b, c)); \
    VA = (expr);                                                                 \
    ip += 4;                                                                     \
    NEXT();                                                                      \
  }
#define UNSIGNED_DIVISION(Name, expr)                          \
  op_##Name : {                                                \
    uint64_t b = VB, c = VC;                                   \
    if (__builtin_expect(c == 0, 0)) TRAP(DivisionTrap(VB, 0)); \
    VA = Wrap(expr);                                           \
    ip += 4;                                                   \
    NEXT();                                                    \
  }
// The integer comparisons of b and c, each as cmp.<name> (V[a] = V[b] <op> V[c], 0 or 1:
// COMPARE) and as the fused br.<name> (jumps when V[a] <op> V[b] holds, else falls through
// past its P: BR_IF).
#define HEXIR_INT_COMPARISONS(X)       \
  X(EqI64, b == c)                     \
  X(NeI64, b != c)                     \
  X(LtSI64, b < c)                     \
  X(LeSI64, b <= c)                    \
  X(LtUI64, uint64_t(b) < uint64_t(c)) \
  X(LeUI64, uint64_t(b) <= uint64_t(c))
#define COMPARE(Name, cond) BINARY(Cmp##Name, cond)
#define BR_IF(Name, cond)       \
  op_Br##Name : {               \
    int64_t b = VA, c = VB;     \
    if (cond) {                 \
      FUEL_CHECK();             \
      JUMP(ip[3], ip + 4);      \
    } else {                    \
      ip += 5 + 2 * ip[4];      \
    }                           \
    NEXT();                     \
  }
// A list op (interpreter_lists.h) `words` long.
#define LIST_OP(Name, words, call) \
  op_##Name:                       \
  TRY_OP(call);                    \
  ip += words;                     \
  NEXT();

Status Interpreter::Run(LinkedModule& linked, uint32_t ordinal, std::vector<Variant>* results,
                        uint64_t fuel, const Interrupt& interrupt, ContextStats* stats) {
  const Module& module = *linked.module;
  const FunctionInfo* const fns = module.functions().data();
  int64_t* const value_globals = linked.value_globals.data();
  Ref<RefObject>* const ref_globals = linked.ref_globals.data();
  int64_t* const copy_values = copy_values_.data();
  Ref<RefObject>* const copy_refs = copy_refs_.data();
  const uint64_t fuel_limit = fuel ? fuel : std::numeric_limits<uint64_t>::max();
  // Checkpoints (taken branches, calls) compare `executed` with next_check only; past it they
  // check the fuel and the interrupt. Without an interrupt next_check is the fuel limit; with
  // one, the first checkpoint checks (a deadline already passed stops the first loop).
  const bool interruptible = interrupt.can_fire();
  uint64_t next_check = interruptible ? 0 : fuel_limit;

  Activation at{ordinal, &fns[ordinal], fns[ordinal].code, 0, 0, values_.data(), refs_.data()};
  const uint32_t* ip = at.code;
  uint64_t executed = 0, internal_calls = 0, import_calls = 0;
  CallStack stack{frames_.data(), 0, frames_.size()};
  Status trap;

  // One label per isa.def opcode: a missing handler is a compile error.
  void* dispatch[256];
  for (void*& d : dispatch) d = &&op_undefined;
#define HEXIR_OP(code, Name, mnemonic, operands, access, terminator, meaning) dispatch[code] = &&op_##Name;
#include "vm/isa.def"
#undef HEXIR_OP

  NEXT();

op_undefined:
  // Unreachable for verified bytecode; kept so a bug cannot jump to a wild address.
  TRAP(Internal("undefined opcode ", *ip, " reached the interpreter"));

// ---- moves ----
op_Nop:
  ip += 1;
  NEXT();
op_ConstI64:
op_ConstF64:
  VA = Wrap(uint64_t{ip[2]} | uint64_t{ip[3]} << 32);
  ip += 4;
  NEXT();
  UNARY(Mov, VB)
op_MovRef: {
  uint32_t b = ip[2];
  at.r[RIDX(1)] = RetainOrMove(b & kMoveBit, at.r[b & kIndexMask]);
  ip += 3;
  NEXT();
}
op_Release: {
  uint32_t n = ip[1];
  for (uint32_t i = 0; i < n; ++i) at.r[ip[2 + i] & kIndexMask].reset();
  ip += 2 + n;
  NEXT();
}

// ---- integer arithmetic ----
  BINARY(AddI64, Wrap(uint64_t(b) + uint64_t(c)))
  BINARY(SubI64, Wrap(uint64_t(b) - uint64_t(c)))
  BINARY(MulI64, Wrap(uint64_t(b) * uint64_t(c)))
  SIGNED_DIVISION(DivSI64, int64_t, b / c)
  SIGNED_DIVISION(RemSI64, int64_t, b % c)
  SIGNED_DIVISION(DivSI32, int32_t, b / c)
  SIGNED_DIVISION(RemSI32, int32_t, b % c)
  UNSIGNED_DIVISION(DivUI64, b / c)
  UNSIGNED_DIVISION(RemUI64, b % c)
  BINARY(AndI64, b & c)
  BINARY(OrI64, b | c)
  BINARY(XorI64, b ^ c)
  BINARY(ShlI64, Wrap(uint64_t(b) << (c & 63)))
  BINARY(ShrSI64, b >> (c & 63))
  BINARY(ShrUI64, Wrap(uint64_t(b) >> (c & 63)))
op_AddImmI64:
  VA = Wrap(uint64_t(VB) + uint64_t(int64_t(int32_t(ip[3]))));
  ip += 4;
  NEXT();
  BINARY(MinSI64, b < c ? b : c)
  BINARY(MaxSI64, b > c ? b : c)
  HEXIR_INT_COMPARISONS(COMPARE)
op_SelectI64:
  VA = VB != 0 ? VC : at.v[ip[4]];
  ip += 5;
  NEXT();
op_SelectRef: {
  uint32_t c = ip[3], d = ip[4];
  {
    Ref<RefObject> chosen = VB != 0 ? at.r[c & kIndexMask] : at.r[d & kIndexMask];
    // MOVE marks a last use: the register is cleared whether or not it was chosen.
    if (c & kMoveBit) at.r[c & kIndexMask].reset();
    if (d & kMoveBit) at.r[d & kIndexMask].reset();
    at.r[RIDX(1)] = std::move(chosen);
  }
  ip += 5;
  NEXT();
}

// ---- floating point and conversions ----
  BINARY_F64(AddF64, Bits(b + c))
  BINARY_F64(SubF64, Bits(b - c))
  BINARY_F64(MulF64, Bits(b * c))
  BINARY_F64(DivF64, Bits(b / c))
  UNARY(NegF64, Bits(-AsF64(VB)))
  BINARY_F64(CmpEqF64, b == c)
  BINARY_F64(CmpLtF64, b < c)
  BINARY_F64(CmpLeF64, b <= c)
  UNARY(CastSI64F64, Bits(static_cast<double>(VB)))
  UNARY(CastF64SI64, SaturatingF64ToI64(AsF64(VB)))
  UNARY(TruncF64F32, F64BitsToF32Bits(VB))
  UNARY(ExtF32F64, F32BitsToF64Bits(VB))
  UNARY(TruncI64I32, static_cast<int32_t>(static_cast<uint32_t>(VB)))

// ---- control flow: checkpoints (fuel, interrupt) at taken branches ----
op_Br:
  FUEL_CHECK();
  JUMP(ip[1], ip + 2);
  NEXT();
op_CondBr: {
  FUEL_CHECK();
  const uint32_t* p1 = ip + 3;
  if (VA != 0) {
    JUMP(ip[2], p1);
  } else {
    const uint32_t* t2 = p1 + 1 + 2 * p1[0];
    JUMP(t2[0], t2 + 1);
  }
  NEXT();
}
op_Switch: {
  FUEL_CHECK();
  uint64_t index = static_cast<uint64_t>(VA);
  const uint32_t* def = ip + 3;
  const uint32_t* table = def + 1 + 2 * def[0];
  if (index < table[0]) {
    // The verifier decoded the offsets of the (T, P) cases: no walk over earlier cases.
    const uint32_t* c = at.code + at.fn->switch_cases[at.fn->switch_index[ip - at.code] +
                                                      static_cast<uint32_t>(index)];
    JUMP(c[0], c + 1);
  } else {
    JUMP(ip[2], def);
  }
  NEXT();
}
  HEXIR_INT_COMPARISONS(BR_IF)
op_BrNz:
  if (VA != 0) {
    FUEL_CHECK();
    JUMP(ip[2], ip + 3);
  } else {
    ip += 4 + 2 * ip[3];
  }
  NEXT();
op_ForI64: {
  int64_t next;
  bool overflow = __builtin_add_overflow(VA, VB, &next);
  VA = next;
  if (__builtin_expect(!overflow && next < VC, 1)) {
    FUEL_CHECK();
    JUMP(ip[4], ip + 5);
  } else {
    ip += 6 + 2 * ip[5];
  }
  NEXT();
}
op_Assert:
  if (VA == 0) TRAP(AssertFailure(module.strings()[ip[2]], ip + 3, at.v));
  ip += 4 + ip[3];
  NEXT();
op_Fail:
  TRAP(FailStatus(VA, module.strings()[ip[2]]));

// ---- calls (interpreter_calls.h) ----
op_Call:
  FUEL_CHECK();
  TRY(EnterCall(fns, at, stack, ip));
  ++internal_calls;
  NEXT();
op_Return:
  if (stack.depth == 0) {
    const uint32_t* list = ip + 1;
    Variant* out = results->data();
    for (uint32_t i = 0; i < list[0]; ++i) ReadEntry(list[1 + i], at.v, at.r, &out[i]);
    for (uint32_t i = 0; i < at.fn->ref_register_count; ++i) at.r[i].reset();
    goto done;
  }
  ReturnToCaller(fns, at, stack, ip);
  NEXT();
op_CallImport:
  // An import may take long (a synchronous dispatch): none starts after the interrupt fired.
  if (interruptible && __builtin_expect(interrupt.Fired(), 0) && Interrupted(interrupt, &trap)) {
    goto trapped;
  }
  {
    Status status = CallImport(linked, at, interrupt, ip);
    ++import_calls;
    if (!status.ok()) TRAP(std::move(status));
  }
  NEXT();

// ---- module state ----
op_Rodata:
  at.r[RIDX(1)] = linked.rodata[ip[2]];
  ip += 3;
  NEXT();
op_GlobalLoadI64:
  VA = value_globals[ip[2]];
  ip += 3;
  NEXT();
op_GlobalStoreI64:
  value_globals[ip[2]] = VA;
  ip += 3;
  NEXT();
op_GlobalLoadRef:
  at.r[RIDX(1)] = ref_globals[ip[2]];
  ip += 3;
  NEXT();
op_GlobalStoreRef: {
  uint32_t a = ip[1];
  ref_globals[ip[2]] = RetainOrMove(a & kMoveBit, at.r[a & kIndexMask]);
  ip += 3;
  NEXT();
}
op_RefIsNull: {
  uint32_t b = ip[2];
  VA = !at.r[b & kIndexMask];
  if (b & kMoveBit) at.r[b & kIndexMask].reset();
  ip += 3;
  NEXT();
}
op_CmpEqRef: {
  uint32_t b = ip[2], c = ip[3];
  VA = at.r[b & kIndexMask].get() == at.r[c & kIndexMask].get();
  if (b & kMoveBit) at.r[b & kIndexMask].reset();
  if (c & kMoveBit) at.r[c & kIndexMask].reset();
  ip += 4;
  NEXT();
}

// ---- lists (interpreter_lists.h): every index, size and kind is data, checked there ----
  LIST_OP(ListAlloc, 4, ListAlloc(ip, at.v, at.r))
  LIST_OP(ListSize, 3, ListSize(ip, at.v, at.r))
  LIST_OP(ListReserve, 3, ListChangeSize(ip, at.v, at.r, &List::Reserve))
  LIST_OP(ListResize, 3, ListChangeSize(ip, at.v, at.r, &List::Resize))
  LIST_OP(ListGetI64, 4, ListGetValue(ip, at.v, at.r, List::Kind::kI64))
  LIST_OP(ListSetI64, 4, ListSetValue(ip, at.v, at.r, List::Kind::kI64))
  LIST_OP(ListGetF64, 4, ListGetValue(ip, at.v, at.r, List::Kind::kF64))
  LIST_OP(ListSetF64, 4, ListSetValue(ip, at.v, at.r, List::Kind::kF64))
  LIST_OP(ListGetRef, 4, ListGetRef(ip, at.v, at.r))
  LIST_OP(ListSetRef, 4, ListSetRef(ip, at.v, at.r))

out_of_fuel:
  trap = ResourceExhausted("out of fuel (limit ", fuel, " instructions)");
trapped:
  stats->instructions += executed;
  stats->internal_calls += internal_calls;
  stats->import_calls += import_calls;
  DescribeTrap(&trap, fns, *at.fn, ip - at.code, stack.frames, stack.depth);
  return trap;
done:
  stats->instructions += executed;
  stats->internal_calls += internal_calls;
  stats->import_calls += import_calls;
  return Status::Ok();
}

#undef NEXT
#undef VA
#undef VB
#undef VC
#undef RIDX
#undef TRAP
#undef TRY
#undef TRY_OP
#undef FUEL_CHECK
#undef JUMP
#undef UNARY
#undef BINARY
#undef BINARY_F64
#undef SIGNED_DIVISION
#undef UNSIGNED_DIVISION
#undef BR_IF
#undef COMPARE
#undef HEXIR_INT_COMPARISONS
#undef LIST_OP

}  // namespace hexir::vm
