#include "base/interrupt.h"

#include <algorithm>
#include <cstdio>

namespace hexir {

Status Interrupt::Cancelled() const { return Aborted("call cancelled"); }

Status Interrupt::Expired() const {
  // Milliseconds, printed as seconds: "after 2.000 s" for a 2 s budget.
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(std::max<int64_t>(0, deadline_ns_ - start_ns_)) / 1e9);
  return DeadlineExceeded("deadline exceeded after ", text, " s");
}

}  // namespace hexir
