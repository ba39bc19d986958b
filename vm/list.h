// vm.list: a growable list of i64, f64 (bits) or refs, held in a ref register.
//
// The element kind is fixed at creation. Sizes and capacities are bounded by kMaxListSize so a
// hostile module cannot ask for unbounded memory. Index checks are the caller's job
// (CheckIndex): the interpreter traps with their message.
//
// Ownership: refcounted; a ref list retains its elements. A list never reaches itself: the
// interpreter's `list.set.ref` refuses a store that would close a cycle (WouldCycle), so
// refcounting frees every list. Destroying a deeply nested list does not recurse on the C
// stack. Thread-safety: none (a list belongs to the context that uses it).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "vm/ref.h"

namespace hexir::vm {

inline constexpr int64_t kMaxListSize = int64_t{1} << 24;

class List final : public RefObject {
  HEXIR_REF_TYPE(List, "vm.list")
 public:
  enum class Kind : uint8_t { kI64 = 0, kF64 = 1, kRef = 2 };

  explicit List(Kind kind) : kind_(kind) {}
  ~List() override;

  Kind kind() const { return kind_; }
  int64_t size() const { return size_; }
  int64_t capacity() const;

  // Errors: InvalidArgument for a negative count, ResourceExhausted above kMaxListSize.
  Status Reserve(int64_t capacity);
  Status Resize(int64_t size);  // new elements are 0 / null

  // OutOfRange "list index I out of range (size N)" unless 0 <= index < size().
  Status CheckIndex(int64_t index) const {
    if (static_cast<uint64_t>(index) < static_cast<uint64_t>(size_)) return Status::Ok();
    return OutOfRange("list index ", index, " out of range (size ", size_, ")");
  }

  // Unchecked element access (index checked, kind matching).
  int64_t value(int64_t i) const { return values_[i]; }
  void set_value(int64_t i, int64_t bits) { values_[i] = bits; }
  const Ref<RefObject>& ref(int64_t i) const { return refs_[i]; }
  void set_ref(int64_t i, Ref<RefObject> r) { refs_[i] = std::move(r); }

  // True when storing `value` into this list would let the list reach itself. The caller
  // holds a reference to this list (so a count of 1 means no other list contains it).
  bool WouldCycle(const RefObject* value) const;

  static const char* KindName(Kind kind);

 private:
  Kind kind_;
  int64_t size_ = 0;
  std::vector<int64_t> values_;       // i64 / f64 lists
  std::vector<Ref<RefObject>> refs_;  // ref lists
};

}  // namespace hexir::vm
