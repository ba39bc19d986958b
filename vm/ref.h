// Refcounted objects held in VM ref registers (buffers, buffer views, lists, HAL objects).
//
// Ownership: RefObject carries an intrusive atomic count starting at 1 for its creator.
// Ref<T> owns one count; copying retains, moving transfers, destruction releases. The
// object deletes itself when the count reaches zero. Thread-safe counting; the objects
// themselves state their own thread-safety.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace hexir::vm {

// Identifies a ref's dynamic type without RTTI; each subclass returns its own id.
// Ids are the address of a per-type static (see HEXIR_REF_TYPE).
using RefTypeId = const void*;

class RefObject {
 public:
  RefObject() = default;
  RefObject(const RefObject&) = delete;
  RefObject& operator=(const RefObject&) = delete;

  void Retain() const { count_.fetch_add(1, std::memory_order_relaxed); }
  void Release() const {
    if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  uint32_t ref_count() const { return count_.load(std::memory_order_acquire); }

  virtual RefTypeId type_id() const = 0;
  // Human-readable type name for error messages and hexir-dump ("hal.buffer_view").
  virtual const char* type_name() const = 0;

 protected:
  virtual ~RefObject() = default;

 private:
  mutable std::atomic<uint32_t> count_{1};
};

// Declares the static type id and name of a RefObject subclass:
//   class Buffer : public vm::RefObject { HEXIR_REF_TYPE(Buffer, "hal.buffer") ... };
#define HEXIR_REF_TYPE(Class, name)                                   \
 public:                                                              \
  static ::hexir::vm::RefTypeId StaticTypeId() {                      \
    static const char kId = 0;                                        \
    return &kId;                                                      \
  }                                                                   \
  static const char* StaticTypeName() { return name; }               \
  ::hexir::vm::RefTypeId type_id() const override { return StaticTypeId(); } \
  const char* type_name() const override { return name; }            \
                                                                      \
 private:

// Owning smart pointer over a RefObject subclass.
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT
  Ref(const Ref& o) : p_(o.p_) { if (p_) p_->Retain(); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <typename U>
  Ref(Ref<U>&& o) noexcept : p_(o.release()) {}  // NOLINT: upcast
  template <typename U>
  Ref(const Ref<U>& o) : p_(o.get()) { if (p_) p_->Retain(); }  // NOLINT: upcast
  ~Ref() { if (p_) p_->Release(); }
  Ref& operator=(Ref o) noexcept { std::swap(p_, o.p_); return *this; }

  // Takes ownership of one count already held by the caller (e.g. from `new T`).
  static Ref Adopt(T* p) { Ref r; r.p_ = p; return r; }
  // Retains `p` (count + 1).
  static Ref Retain(T* p) { if (p) p->Retain(); Ref r; r.p_ = p; return r; }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Gives up ownership without releasing.
  T* release() { T* p = p_; p_ = nullptr; return p; }
  void reset() { if (p_) { p_->Release(); p_ = nullptr; } }

 private:
  T* p_ = nullptr;
};

// `src` moved out (it becomes null: no refcount traffic) when `move`, else retained: the VM's
// MOVE bit on a ref operand (isa.def) decides. `dst = RetainOrMove(move, src)` costs what
// the hand-written branch costs (the result initializes Ref's by-value assignment directly).
template <typename T>
inline Ref<T> RetainOrMove(bool move, Ref<T>& src) {
  if (move) return std::move(src);
  return src;
}

template <typename T, typename... Args>
Ref<T> MakeRef(Args&&... args) {
  return Ref<T>::Adopt(new T(std::forward<Args>(args)...));
}

// Checked downcast: null when `o` is null or not a T.
template <typename T>
T* RefCast(RefObject* o) {
  return (o && o->type_id() == T::StaticTypeId()) ? static_cast<T*>(o) : nullptr;
}

}  // namespace hexir::vm
