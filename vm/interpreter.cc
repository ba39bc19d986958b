#include "vm/interpreter.h"

// Keep one indirect jump per handler (GCC otherwise merges the handlers' identical dispatch
// tails into one shared jump, which predicts far worse).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-crossjumping")
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "vm/isa.h"
#include "vm/list.h"

namespace hexir::vm {
namespace {

inline double AsF64(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}
inline int64_t Bits(double d) {
  int64_t bits;
  std::memcpy(&bits, &d, sizeof(d));
  return bits;
}
inline int64_t Wrap(uint64_t u) { return static_cast<int64_t>(u); }

int64_t SaturatingF64ToI64(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (d < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

// Block-argument copy `p` (count, then (source, destination) entries): all sources are read
// before any destination is written. The one-pair case needs no scratch.
__attribute__((noinline)) void CopyPairs(const uint32_t* p, int64_t* v, Ref<RefObject>* r,
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
inline void ParallelCopy(const uint32_t* p, int64_t* v, Ref<RefObject>* r, int64_t* sv,
                         Ref<RefObject>* sr) {
  if (p[0] != 0) CopyPairs(p, v, r, sv, sr);
}

// Reads list entry `e` of the frame (v, r) into a Variant: refs moved with MOVE, else retained.
inline void ReadEntry(uint32_t e, int64_t* v, Ref<RefObject>* r, Variant* out) {
  if (e & kRefBit) {
    out->ref = RetainOrMove(e & kMoveBit, r[e & kIndexMask]);
  } else {
    out->bits = v[e];
  }
}

// The R operand of a list op that is not a usable list (cold path).
Status NotAList(const RefObject* o) {
  if (!o) return InvalidArgument("null ref where a vm.list is required");
  return InvalidArgument("expected vm.list, got ", o->type_name());
}
Status WrongKind(const List& list, List::Kind wanted) {
  return InvalidArgument("list holds ", List::KindName(list.kind()), " elements, not ",
                         List::KindName(wanted));
}
// The trap of an integer division or remainder by zero, or of INT_MIN by -1; the words of a
// kernel's (hal/kernel_error.h), so host and device code fail alike.
__attribute__((noinline, cold)) Status DivisionTrap(int64_t dividend, int64_t divisor) {
  return InvalidArgument("integer division ", divisor == 0 ? "by zero" : "overflow", " (",
                         dividend, " / ", divisor, ")");
}

// The message of a false `assert`: each "{}" of `format` becomes the next value of the
// register list at `list` (signed decimal); placeholders past the list's end stay as written.
__attribute__((noinline)) Status AssertFailure(std::string_view format, const uint32_t* list,
                                               const int64_t* v) {
  std::string message;
  uint32_t next = 0, count = list[0];
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '{' && i + 1 < format.size() && format[i + 1] == '}' && next < count) {
      message += std::to_string(v[list[1 + next++]]);
      ++i;
      continue;
    }
    message += format[i];
  }
  return InvalidArgument(message);
}

// Prefixes a trap raised by the instruction at `ip` with its mnemonic.
Status OpError(const uint32_t* ip, const Status& s) {
  return Status(s.code(), StrCat(GetOpInfo(*ip).mnemonic, ": ", s.message()));
}
inline List* AsList(RefObject* o) {
  return o && o->type_id() == List::StaticTypeId() ? static_cast<List*>(o) : nullptr;
}

// Instructions between two interrupt checks at taken branches and calls: a clock read per
// 8192 instructions (a few microseconds of bytecode) is far below the 2% budget.
constexpr uint64_t kInterruptCheckInstructions = 8192;

// The interrupt check of a checkpoint (cold: one in kInterruptCheckInstructions).
__attribute__((noinline)) bool Interrupted(const Interrupt& interrupt, Status* trap) {
  Status st = interrupt.Check();
  if (st.ok()) return false;
  *trap = std::move(st);
  return true;
}

template <typename T>
void GrowTo(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(std::max(n, v.size() * 2));
}

}  // namespace

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

Status Interpreter::Run(LinkedModule& linked, uint32_t ordinal, std::vector<Variant>* results,
                        uint64_t fuel, const Interrupt& interrupt, ContextStats* stats) {
  const Module& module = *linked.module;
  const FunctionInfo* const fns = module.functions().data();
  const LinkedImport* const imports = linked.imports.data();
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

  uint32_t current = ordinal;
  const FunctionInfo* fn = &fns[ordinal];
  const uint32_t* code = fn->code;
  const uint32_t* ip = code;
  size_t value_base = 0, ref_base = 0;
  int64_t* v = values_.data();
  Ref<RefObject>* r = refs_.data();
  uint64_t executed = 0, internal_calls = 0, import_calls = 0;
  Frame* frames = frames_.data();  // frames[0 .. depth): the callers of the current function
  size_t depth = 0, frame_capacity = frames_.size();
  Status trap;

  // One label per isa.def opcode: a missing handler is a compile error.
  void* dispatch[256];
  for (void*& d : dispatch) d = &&op_undefined;
#define HEXIR_OP(code, Name, mnemonic, operands, access, terminator, meaning) dispatch[code] = &&op_##Name;
#include "vm/isa.def"
#undef HEXIR_OP

#define NEXT()                                \
  do {                                        \
    ++executed;                               \
    goto* dispatch[*ip & kOpcodeMask];        \
  } while (0)
#define VA v[ip[1]]
#define VB v[ip[2]]
#define VC v[ip[3]]
#define RIDX(i) (ip[i] & kIndexMask)
#define TRAP(status) \
  do {               \
    trap = (status); \
    goto trapped;    \
  } while (0)
// Runs a Status-returning call; a failure traps with the op's mnemonic. The Status lives in
// its own scope: no object with a destructor may be live across the indirect `goto` of NEXT
// (clang rejects it; see the handlers below, which scope such objects the same way).
#define TRY_OP(expr)                                \
  do {                                              \
    Status try_status_ = (expr);                    \
    if (!try_status_.ok()) TRAP(OpError(ip, try_status_)); \
  } while (0)
#define FUEL_CHECK()                                                          \
  if (__builtin_expect(executed >= next_check, 0)) {                          \
    if (executed >= fuel_limit) goto out_of_fuel;                             \
    if (Interrupted(interrupt, &trap)) goto trapped;                          \
    next_check = std::min(fuel_limit, executed + kInterruptCheckInstructions); \
  }
#define BINARY(Name, expr) \
  op_##Name : {            \
    int64_t b = VB, c = VC; \
    VA = (expr);           \
    ip += 4;               \
    NEXT();                \
  }
// Division and remainder (ISA: traps on a zero divisor and on INT_MIN / -1, like kernels).
// The operands are read at the op's width (an i32 op truncates hostile i64 registers first),
// so the C++ division below never overflows.
#define SIGNED_DIVISION(Name, T, expr)                                                  \
  op_##Name : {                                                                         \
    T b = static_cast<T>(VB), c = static_cast<T>(VC);                                   \
    if (__builtin_expect(c == 0 || (c == -1 && b == std::numeric_limits<T>::min()), 0)) \
      TRAP(DivisionTrap(b, c));                                                          \
    VA = (expr);                                                                        \
    ip += 4;                                                                            \
    NEXT();                                                                             \
  }
#define UNSIGNED_DIVISION(Name, expr)                                      \
  op_##Name : {                                                            \
    uint64_t b = VB, c = VC;                                               \
    if (__builtin_expect(c == 0, 0)) TRAP(DivisionTrap(VB, 0));             \
    VA = Wrap(expr);                                                       \
    ip += 4;                                                               \
    NEXT();                                                                \
  }
#define BINARY_F64(Name, expr)                 \
  op_##Name : {                                \
    double b = AsF64(VB), c = AsF64(VC);       \
    VA = (expr);                               \
    ip += 4;                                   \
    NEXT();                                    \
  }

  NEXT();

op_undefined:
  // Unreachable for verified bytecode; kept so a bug cannot jump to a wild address.
  TRAP(Internal("undefined opcode ", *ip, " reached the interpreter"));

op_Nop:
  ip += 1;
  NEXT();
op_ConstI64:
op_ConstF64:
  VA = Wrap(uint64_t{ip[2]} | uint64_t{ip[3]} << 32);
  ip += 4;
  NEXT();
op_Mov:
  VA = VB;
  ip += 3;
  NEXT();
op_MovRef: {
  uint32_t b = ip[2];
  r[RIDX(1)] = RetainOrMove(b & kMoveBit, r[b & kIndexMask]);
  ip += 3;
  NEXT();
}
op_Release: {
  uint32_t n = ip[1];
  for (uint32_t i = 0; i < n; ++i) r[ip[2 + i] & kIndexMask].reset();
  ip += 2 + n;
  NEXT();
}

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
  BINARY(CmpEqI64, b == c)
  BINARY(CmpNeI64, b != c)
  BINARY(CmpLtSI64, b < c)
  BINARY(CmpLeSI64, b <= c)
  BINARY(CmpLtUI64, uint64_t(b) < uint64_t(c))
  BINARY(CmpLeUI64, uint64_t(b) <= uint64_t(c))
op_SelectI64:
  VA = VB != 0 ? VC : v[ip[4]];
  ip += 5;
  NEXT();
op_SelectRef: {
  uint32_t c = ip[3], d = ip[4];
  {
    Ref<RefObject> chosen = VB != 0 ? r[c & kIndexMask] : r[d & kIndexMask];
    // MOVE marks a last use: the register is cleared whether or not it was chosen.
    if (c & kMoveBit) r[c & kIndexMask].reset();
    if (d & kMoveBit) r[d & kIndexMask].reset();
    r[RIDX(1)] = std::move(chosen);
  }
  ip += 5;
  NEXT();
}

  BINARY_F64(AddF64, Bits(b + c))
  BINARY_F64(SubF64, Bits(b - c))
  BINARY_F64(MulF64, Bits(b * c))
  BINARY_F64(DivF64, Bits(b / c))
op_NegF64:
  VA = Bits(-AsF64(VB));
  ip += 3;
  NEXT();
  BINARY_F64(CmpEqF64, b == c)
  BINARY_F64(CmpLtF64, b < c)
  BINARY_F64(CmpLeF64, b <= c)

op_CastSI64F64:
  VA = Bits(static_cast<double>(VB));
  ip += 3;
  NEXT();
op_CastF64SI64:
  VA = SaturatingF64ToI64(AsF64(VB));
  ip += 3;
  NEXT();
op_TruncF64F32: {
  float f = static_cast<float>(AsF64(VB));
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  VA = bits;
  ip += 3;
  NEXT();
}
op_ExtF32F64: {
  uint32_t bits = static_cast<uint32_t>(VB);
  float f;
  std::memcpy(&f, &bits, 4);
  VA = Bits(static_cast<double>(f));
  ip += 3;
  NEXT();
}
op_TruncI64I32:
  VA = static_cast<int32_t>(static_cast<uint32_t>(VB));
  ip += 3;
  NEXT();

op_Br:
  FUEL_CHECK();
  ParallelCopy(ip + 2, v, r, copy_values, copy_refs);
  ip = code + ip[1];
  NEXT();
op_CondBr: {
  FUEL_CHECK();
  const uint32_t* p1 = ip + 3;
  if (VA != 0) {
    ParallelCopy(p1, v, r, copy_values, copy_refs);
    ip = code + ip[2];
  } else {
    const uint32_t* t2 = p1 + 1 + 2 * p1[0];
    ParallelCopy(t2 + 1, v, r, copy_values, copy_refs);
    ip = code + t2[0];
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
    const uint32_t* c =
        code + fn->switch_cases[fn->switch_index[ip - code] + static_cast<uint32_t>(index)];
    ParallelCopy(c + 1, v, r, copy_values, copy_refs);
    ip = code + c[0];
  } else {
    ParallelCopy(def, v, r, copy_values, copy_refs);
    ip = code + ip[2];
  }
  NEXT();
}

#define BR_IF(Name, cond)                                 \
  op_##Name : {                                           \
    int64_t a = VA, b = VB;                               \
    if (cond) {                                           \
      FUEL_CHECK();                                       \
      ParallelCopy(ip + 4, v, r, copy_values, copy_refs); \
      ip = code + ip[3];                                  \
    } else {                                              \
      ip += 5 + 2 * ip[4];                                \
    }                                                     \
    NEXT();                                               \
  }
  BR_IF(BrEqI64, a == b)
  BR_IF(BrNeI64, a != b)
  BR_IF(BrLtSI64, a < b)
  BR_IF(BrLeSI64, a <= b)
  BR_IF(BrLtUI64, uint64_t(a) < uint64_t(b))
  BR_IF(BrLeUI64, uint64_t(a) <= uint64_t(b))
#undef BR_IF
op_BrNz:
  if (VA != 0) {
    FUEL_CHECK();
    ParallelCopy(ip + 3, v, r, copy_values, copy_refs);
    ip = code + ip[2];
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
    ParallelCopy(ip + 5, v, r, copy_values, copy_refs);
    ip = code + ip[4];
  } else {
    ip += 6 + 2 * ip[5];
  }
  NEXT();
}
op_Call: {
  FUEL_CHECK();
  if (__builtin_expect(depth == frame_capacity, 0)) {
    // Capacities are powers of two from 64, so this trips exactly at kMaxCallDepth.
    if (depth >= kMaxCallDepth) {
      TRAP(ResourceExhausted("call stack overflow (", kMaxCallDepth, " nested calls)"));
    }
    frames_.resize(frame_capacity * 2);
    frames = frames_.data();
    frame_capacity = frames_.size();
  }
  uint32_t callee_ordinal = ip[1];
  const FunctionInfo* callee = &fns[callee_ordinal];
  size_t new_value_base = value_base + fn->value_register_count;
  size_t new_ref_base = ref_base + fn->ref_register_count;
  if (new_value_base + callee->value_register_count > kMaxRegisterStack ||
      new_ref_base + callee->ref_register_count > kMaxRegisterStack) {
    TRAP(ResourceExhausted("register stack exhausted (", kMaxRegisterStack,
                           " registers per bank)"));
  }
  if (new_value_base + callee->value_register_count > values_.size()) {
    GrowTo(values_, new_value_base + callee->value_register_count);
    v = values_.data() + value_base;
  }
  if (new_ref_base + callee->ref_register_count > refs_.size()) {
    GrowTo(refs_, new_ref_base + callee->ref_register_count);
    r = refs_.data() + ref_base;
  }
  int64_t* nv = values_.data() + new_value_base;
  Ref<RefObject>* nr = refs_.data() + new_ref_base;
  const uint32_t* args = ip + 2;
  uint32_t n = args[0], vi = 0, ri = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t e = args[1 + i];
    if (e & kRefBit) {
      nr[ri++] = RetainOrMove(e & kMoveBit, r[e & kIndexMask]);
    } else {
      nv[vi++] = v[e];
    }
  }
  // Registers past the arguments start at 0 (a short loop: memset's call costs more).
  for (uint32_t i = vi; i < callee->value_register_count; ++i) nv[i] = 0;
  frames[depth++] = Frame{current, ip, args + 1 + n, value_base, ref_base};
  current = callee_ordinal;
  fn = callee;
  code = ip = callee->code;
  value_base = new_value_base;
  ref_base = new_ref_base;
  v = nv;
  r = nr;
  ++internal_calls;
  NEXT();
}
op_Return: {
  const uint32_t* list = ip + 1;
  uint32_t n = list[0];
  if (depth == 0) {
    Variant* out = results->data();
    for (uint32_t i = 0; i < n; ++i) ReadEntry(list[1 + i], v, r, &out[i]);
    for (uint32_t i = 0; i < fn->ref_register_count; ++i) r[i].reset();
    goto done;
  }
  const Frame frame = frames[--depth];
  int64_t* cv = values_.data() + frame.value_base;
  Ref<RefObject>* cr = refs_.data() + frame.ref_base;
  const uint32_t* dst = frame.return_ip;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t s = list[1 + i], d = dst[1 + i];
    if (s & kRefBit) {
      cr[d & kIndexMask] = RetainOrMove(s & kMoveBit, r[s & kIndexMask]);
    } else {
      cv[d] = v[s];
    }
  }
  for (uint32_t i = 0; i < fn->ref_register_count; ++i) r[i].reset();
  current = frame.function;
  fn = &fns[current];
  code = fn->code;
  ip = dst + 1 + n;
  value_base = frame.value_base;
  ref_base = frame.ref_base;
  v = cv;
  r = cr;
  NEXT();
}
op_CallImport: {
  // An import may take long (a synchronous dispatch): none starts after the interrupt fired.
  if (interruptible && __builtin_expect(interrupt.Fired(), 0) && Interrupted(interrupt, &trap)) {
    goto trapped;
  }
  uint32_t m = ip[1];
  const ImportInfo& info = module.imports()[m];
  const uint32_t* args = ip + 2;
  uint32_t n = args[0];
  Variant* a = import_args_.data();
  for (uint32_t i = 0; i < n; ++i) ReadEntry(args[1 + i], v, r, &a[i]);
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
  {
    Status status = imports[m].function->call(*imports[m].state, call);
    for (uint32_t i = 0; i < n; ++i) a[i].ref.reset();
    ++import_calls;
    if (!status.ok()) TRAP(std::move(status).WithContext(info.name));
  }
  for (uint32_t i = 0; i < k; ++i) {
    uint32_t e = res[1 + i];
    if (e & kRefBit) {
      r[e & kIndexMask] = std::move(out[i].ref);
    } else {
      v[e] = out[i].bits;
    }
  }
  ip = res + 1 + k;
  NEXT();
}
op_Assert:
  if (VA == 0) TRAP(AssertFailure(module.strings()[ip[2]], ip + 3, v));
  ip += 4 + ip[3];
  NEXT();
op_Fail: {
  int64_t code_value = VA;
  StatusCode sc = code_value >= 1 && code_value <= static_cast<int64_t>(StatusCode::kInternal)
                      ? static_cast<StatusCode>(code_value)
                      : StatusCode::kAborted;
  TRAP(Status(sc, std::string(module.strings()[ip[2]])));
}

op_Rodata:
  r[RIDX(1)] = linked.rodata[ip[2]];
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
  r[RIDX(1)] = ref_globals[ip[2]];
  ip += 3;
  NEXT();
op_GlobalStoreRef: {
  uint32_t a = ip[1];
  ref_globals[ip[2]] = RetainOrMove(a & kMoveBit, r[a & kIndexMask]);
  ip += 3;
  NEXT();
}
op_RefIsNull: {
  uint32_t b = ip[2];
  VA = !r[b & kIndexMask];
  if (b & kMoveBit) r[b & kIndexMask].reset();
  ip += 3;
  NEXT();
}

// ---- lists: every index, size and kind is data, checked here (cold paths trap) ----
#define LIST_AT(i, name)                                   \
  List* name = AsList(r[RIDX(i)].get());                   \
  if (__builtin_expect(!name, 0)) TRAP(OpError(ip, NotAList(r[RIDX(i)].get())))
#define RELEASE_IF_MOVED(i) \
  if (ip[i] & kMoveBit) r[RIDX(i)].reset()
op_ListAlloc: {
  {
    Ref<List> list = MakeRef<List>(static_cast<List::Kind>(ip[3]));
    TRY_OP(list->Reserve(VB));
    r[RIDX(1)] = std::move(list);
  }
  ip += 4;
  NEXT();
}
op_ListSize: {
  LIST_AT(2, list);
  VA = list->size();
  RELEASE_IF_MOVED(2);
  ip += 3;
  NEXT();
}
op_ListReserve: {
  LIST_AT(1, list);
  TRY_OP(list->Reserve(VB));
  RELEASE_IF_MOVED(1);
  ip += 3;
  NEXT();
}
op_ListResize: {
  LIST_AT(1, list);
  TRY_OP(list->Resize(VB));
  RELEASE_IF_MOVED(1);
  ip += 3;
  NEXT();
}
#define LIST_GET_VALUE(Name, KIND)                                          \
  op_##Name : {                                                             \
    LIST_AT(2, list);                                                       \
    if (list->kind() != KIND) TRAP(OpError(ip, WrongKind(*list, KIND)));    \
    int64_t index = VC;                                                     \
    TRY_OP(list->CheckIndex(index));                                        \
    VA = list->value(index);                                                \
    RELEASE_IF_MOVED(2);                                                    \
    ip += 4;                                                                \
    NEXT();                                                                 \
  }
#define LIST_SET_VALUE(Name, KIND)                                          \
  op_##Name : {                                                             \
    LIST_AT(1, list);                                                       \
    if (list->kind() != KIND) TRAP(OpError(ip, WrongKind(*list, KIND)));    \
    int64_t index = VB;                                                     \
    TRY_OP(list->CheckIndex(index));                                        \
    list->set_value(index, VC);                                             \
    RELEASE_IF_MOVED(1);                                                    \
    ip += 4;                                                                \
    NEXT();                                                                 \
  }
  LIST_GET_VALUE(ListGetI64, List::Kind::kI64)
  LIST_SET_VALUE(ListSetI64, List::Kind::kI64)
  LIST_GET_VALUE(ListGetF64, List::Kind::kF64)
  LIST_SET_VALUE(ListSetF64, List::Kind::kF64)
#undef LIST_GET_VALUE
#undef LIST_SET_VALUE
op_ListGetRef: {
  LIST_AT(2, list);
  if (list->kind() != List::Kind::kRef) TRAP(OpError(ip, WrongKind(*list, List::Kind::kRef)));
  int64_t index = VC;
  TRY_OP(list->CheckIndex(index));
  {
    Ref<RefObject> element = list->ref(index);
    RELEASE_IF_MOVED(2);  // may free the list: `element` is already retained
    r[RIDX(1)] = std::move(element);
  }
  ip += 4;
  NEXT();
}
op_ListSetRef: {
  LIST_AT(1, list);
  if (list->kind() != List::Kind::kRef) TRAP(OpError(ip, WrongKind(*list, List::Kind::kRef)));
  int64_t index = VB;
  TRY_OP(list->CheckIndex(index));
  uint32_t c = ip[3];
  if (list->WouldCycle(r[c & kIndexMask].get())) {
    TRAP(OpError(ip, InvalidArgument("storing list R", c & kIndexMask, " into list R", RIDX(1),
                                     " would create a reference cycle")));
  }
  list->set_ref(index, RetainOrMove(c & kMoveBit, r[c & kIndexMask]));
  RELEASE_IF_MOVED(1);
  ip += 4;
  NEXT();
}
#undef LIST_AT
#undef RELEASE_IF_MOVED

#undef NEXT
#undef VA
#undef VB
#undef VC
#undef RIDX
#undef TRAP
#undef FUEL_CHECK
#undef TRY_OP
#undef BINARY
#undef SIGNED_DIVISION
#undef UNSIGNED_DIVISION
#undef BINARY_F64

out_of_fuel:
  trap = ResourceExhausted("out of fuel (limit ", fuel, " instructions)");
trapped:
  stats->instructions += executed;
  stats->internal_calls += internal_calls;
  stats->import_calls += import_calls;
  {
    // The callers, innermost first (at most kShownCallers of them).
    constexpr size_t kShownCallers = 8;
    std::string callers;
    for (size_t k = depth, shown = 0; k > 0 && shown < kShownCallers; --k, ++shown) {
      const Frame& f = frames[k - 1];
      callers += StrCat(shown ? ", " : "; called from ", "'", fns[f.function].name, "' @",
                        f.call_ip - fns[f.function].code);
    }
    if (depth > kShownCallers) callers += StrCat(" and ", depth - kShownCallers, " more");
    return Status(trap.code(), StrCat("function '", fn->name, "' @", ip - code, ": ",
                                      trap.message(), callers));
  }
done:
  stats->instructions += executed;
  stats->internal_calls += internal_calls;
  stats->import_calls += import_calls;
  return Status::Ok();
}

}  // namespace hexir::vm
