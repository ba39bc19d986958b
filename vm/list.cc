#include "vm/list.h"

#include <unordered_set>
#include <utility>

namespace hexir::vm {
namespace {

// Elements of lists being destroyed on this thread. Releasing a nested list from inside a
// destructor would recurse once per nesting level; instead the outermost destructor drains
// this queue.
thread_local std::vector<Ref<RefObject>> release_queue;
thread_local bool draining = false;

Status CheckCount(int64_t n, const char* what) {
  if (n < 0) return InvalidArgument("list ", what, " ", n, " is negative");
  if (n > kMaxListSize) {
    return ResourceExhausted("list ", what, " ", n, " exceeds the limit ", kMaxListSize);
  }
  return Status::Ok();
}

}  // namespace

List::~List() {
  for (Ref<RefObject>& r : refs_) {
    if (r) release_queue.push_back(std::move(r));
  }
  if (draining) return;
  draining = true;
  while (!release_queue.empty()) {
    Ref<RefObject> r = std::move(release_queue.back());
    release_queue.pop_back();
    r.reset();  // may destroy a list, which queues its elements
  }
  draining = false;
}

const char* List::KindName(Kind kind) {
  switch (kind) {
    case Kind::kI64: return "i64";
    case Kind::kF64: return "f64";
    case Kind::kRef: return "ref";
  }
  return "?";
}

int64_t List::capacity() const {
  return static_cast<int64_t>(kind_ == Kind::kRef ? refs_.capacity() : values_.capacity());
}

Status List::Reserve(int64_t capacity) {
  HEXIR_RETURN_IF_ERROR(CheckCount(capacity, "capacity"));
  if (kind_ == Kind::kRef) {
    refs_.reserve(static_cast<size_t>(capacity));
  } else {
    values_.reserve(static_cast<size_t>(capacity));
  }
  return Status::Ok();
}

Status List::Resize(int64_t size) {
  HEXIR_RETURN_IF_ERROR(CheckCount(size, "size"));
  if (kind_ == Kind::kRef) {
    if (size < size_) {
      // Release through the queue-aware path: move the tail out before shrinking.
      std::vector<Ref<RefObject>> tail(std::make_move_iterator(refs_.begin() + size),
                                       std::make_move_iterator(refs_.end()));
      refs_.resize(static_cast<size_t>(size));
      size_ = size;
      return Status::Ok();  // `tail` releases here, after the list is consistent
    }
    refs_.resize(static_cast<size_t>(size));
  } else {
    values_.resize(static_cast<size_t>(size), 0);
  }
  size_ = size;
  return Status::Ok();
}

bool List::WouldCycle(const RefObject* value) const {
  const List* start = value && value->type_id() == StaticTypeId()
                          ? static_cast<const List*>(value)
                          : nullptr;
  if (!start) return false;
  if (start == this) return true;
  // The caller holds one reference to this list; if that is the only one, no list contains
  // this one, so nothing reachable from `value` can (keeps building nested lists linear).
  if (ref_count() == 1) return false;
  // Depth-first over the lists reachable from `value`, with an explicit stack.
  // `seen` keeps shared sublists from being walked twice.
  std::vector<const List*> stack{start};
  std::unordered_set<const List*> seen{start};
  while (!stack.empty()) {
    const List* l = stack.back();
    stack.pop_back();
    if (l == this) return true;
    if (l->kind_ != Kind::kRef) continue;
    for (const Ref<RefObject>& r : l->refs_) {
      if (!r || r->type_id() != StaticTypeId()) continue;
      const List* child = static_cast<const List*>(r.get());
      if (seen.insert(child).second) stack.push_back(child);
    }
  }
  return false;
}

}  // namespace hexir::vm
