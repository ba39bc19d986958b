// The `list.*` instructions of the interpreter (internal to vm/interpreter.cc). Every index,
// size and element kind is data, so each op checks its list operand (a non-null vm.list of
// the kind it accesses), the index and the cycle rule here and returns the failure; the loop
// prefixes it with the op's mnemonic and traps. Each function executes the instruction at
// `ip` over the frame's registers (v, r) and leaves `ip` to the loop. MOVE on the list
// operand releases the register after the op. Header-only: the loop inlines them.
#pragma once

#include <cstdint>
#include <utility>

#include "base/status.h"
#include "vm/isa.h"
#include "vm/list.h"
#include "vm/ref.h"

namespace hexir::vm::interpreter {

// The vm.list in ref operand `i` of the instruction at `ip`, or the failure naming what is
// there instead.
__attribute__((always_inline)) inline StatusOr<List*> ListOperand(const uint32_t* ip, int i,
                                                                  Ref<RefObject>* r) {
  RefObject* o = r[ip[i] & kIndexMask].get();
  if (__builtin_expect(o && o->type_id() == List::StaticTypeId(), 1)) return static_cast<List*>(o);
  if (!o) return InvalidArgument("null ref where a vm.list is required");
  return InvalidArgument("expected vm.list, got ", o->type_name());
}

// ListOperand of element kind `kind`.
__attribute__((always_inline)) inline StatusOr<List*> ListOperandOfKind(const uint32_t* ip, int i,
                                                                        Ref<RefObject>* r,
                                                                        List::Kind kind) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperand(ip, i, r));
  if (__builtin_expect(list->kind() != kind, 0)) {
    return InvalidArgument("list holds ", List::KindName(list->kind()), " elements, not ",
                           List::KindName(kind));
  }
  return list;
}

// Clears ref operand `i` when it carries MOVE (its last use).
__attribute__((always_inline)) inline void ReleaseIfMoved(const uint32_t* ip, int i,
                                                          Ref<RefObject>* r) {
  if (ip[i] & kMoveBit) r[ip[i] & kIndexMask].reset();
}

// list.alloc R[a], V[b], J: a new empty list of kind J with capacity V[b].
__attribute__((always_inline)) inline Status ListAlloc(const uint32_t* ip, int64_t* v,
                                                       Ref<RefObject>* r) {
  Ref<List> list = MakeRef<List>(static_cast<List::Kind>(ip[3]));
  HEXIR_RETURN_IF_ERROR(list->Reserve(v[ip[2]]));
  r[ip[1] & kIndexMask] = std::move(list);
  return Status::Ok();
}

// list.size V[a], R[b].
__attribute__((always_inline)) inline Status ListSize(const uint32_t* ip, int64_t* v,
                                                      Ref<RefObject>* r) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperand(ip, 2, r));
  v[ip[1]] = list->size();
  ReleaseIfMoved(ip, 2, r);
  return Status::Ok();
}

// list.reserve / list.resize R[a], V[b]: `change` is List::Reserve or List::Resize.
__attribute__((always_inline)) inline Status ListChangeSize(const uint32_t* ip, int64_t* v,
                                                            Ref<RefObject>* r,
                                                            Status (List::*change)(int64_t)) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperand(ip, 1, r));
  HEXIR_RETURN_IF_ERROR((list->*change)(v[ip[2]]));
  ReleaseIfMoved(ip, 1, r);
  return Status::Ok();
}

// list.get.{i64,f64} V[a], R[b], V[c]: element V[c] of a value list of `kind`.
__attribute__((always_inline)) inline Status ListGetValue(const uint32_t* ip, int64_t* v,
                                                          Ref<RefObject>* r, List::Kind kind) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperandOfKind(ip, 2, r, kind));
  int64_t index = v[ip[3]];
  HEXIR_RETURN_IF_ERROR(list->CheckIndex(index));
  v[ip[1]] = list->value(index);
  ReleaseIfMoved(ip, 2, r);
  return Status::Ok();
}

// list.set.{i64,f64} R[a], V[b], V[c]: element V[b] of a value list of `kind` = V[c].
__attribute__((always_inline)) inline Status ListSetValue(const uint32_t* ip, int64_t* v,
                                                          Ref<RefObject>* r, List::Kind kind) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperandOfKind(ip, 1, r, kind));
  int64_t index = v[ip[2]];
  HEXIR_RETURN_IF_ERROR(list->CheckIndex(index));
  list->set_value(index, v[ip[3]]);
  ReleaseIfMoved(ip, 1, r);
  return Status::Ok();
}

// list.get.ref R[a], R[b], V[c]: element V[c] of a ref list (retained; may be null).
__attribute__((always_inline)) inline Status ListGetRef(const uint32_t* ip, int64_t* v,
                                                        Ref<RefObject>* r) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperandOfKind(ip, 2, r, List::Kind::kRef));
  int64_t index = v[ip[3]];
  HEXIR_RETURN_IF_ERROR(list->CheckIndex(index));
  Ref<RefObject> element = list->ref(index);
  ReleaseIfMoved(ip, 2, r);  // may free the list: `element` is already retained
  r[ip[1] & kIndexMask] = std::move(element);
  return Status::Ok();
}

// list.set.ref R[a], V[b], R[c]: element V[b] of a ref list = R[c] (retained, or moved with
// MOVE), refused when the list would reach itself.
__attribute__((always_inline)) inline Status ListSetRef(const uint32_t* ip, int64_t* v,
                                                        Ref<RefObject>* r) {
  HEXIR_ASSIGN_OR_RETURN(List * list, ListOperandOfKind(ip, 1, r, List::Kind::kRef));
  int64_t index = v[ip[2]];
  HEXIR_RETURN_IF_ERROR(list->CheckIndex(index));
  uint32_t c = ip[3];
  if (list->WouldCycle(r[c & kIndexMask].get())) {
    return InvalidArgument("storing list R", c & kIndexMask, " into list R", ip[1] & kIndexMask,
                           " would create a reference cycle");
  }
  list->set_ref(index, RetainOrMove(c & kMoveBit, r[c & kIndexMask]));
  ReleaseIfMoved(ip, 1, r);
  return Status::Ok();
}

}  // namespace hexir::vm::interpreter
