// How many threads a parallel loop is worth: a dispatch (or a wave of them) whose estimated
// work is too small to pay for handing part of it to another worker runs on the executing
// thread alone (hal/drivers/cpu/README.md, "Worker pool").
//
// The estimate comes from the compiler's cost metadata, written into every CPU executable as
// attrs "cost.<entry>.flops", "cost.<entry>.bytes_read", "cost.<entry>.bytes_written"
// (passes/dispatch costs; "?" where a dynamic shape leaves it open). It is a nominal
// one-thread time, not a prediction: flops at kFlopsPerNs plus bytes at kBytesPerNs, both
// rates chosen low so that the work of a compute-bound kernel is not underestimated.
// A field of run-time shape comes as "cost.<entry>.<field>.words", a polynomial over the
// dispatch's parameter words ("6144 + 12*w0*w1*w2"), with "cost.<entry>.params" naming the
// parameter binding (passes/codegen/CPUWorkWords.h): evaluated per dispatch from the words it
// is given. Unknown work (no attrs, a field without words, words out of the binding's range
// or negative) counts as large: such loops are shared as before.
#pragma once

#include <cstdint>
#include <vector>

#include "hal/command_buffer.h"
#include "hal/cost_formula.h"
#include "vm/native_module.h"

namespace hexir::hal::cpu {

inline constexpr double kUnknownWorkNs = -1;

// Nominal rates of one thread for the estimate (f32 flops and bytes read + written per ns).
inline constexpr double kFlopsPerNs = 50;
inline constexpr double kBytesPerNs = 50;

// Default of HEXIR_CPU_MIN_WORK_PER_THREAD_NS: a loop gets one thread per this much
// estimated work. Waking or joining a worker, and moving the data a kernel's producer left in
// one core's cache, costs microseconds on a quiet machine and tens of microseconds where the
// worker has to be scheduled first (measured on MobileNetV3-small's 1-5 us dispatches). The
// estimate runs 2-4x the real time, so kernels of ~5-10 us and more are shared.
inline constexpr double kDefaultMinWorkPerThreadNs = 10000;

// The minimum work per thread in effect: HEXIR_CPU_MIN_WORK_PER_THREAD_NS when set to a
// number >= 0 (0 = share every loop, as without the policy), else the default.
double MinWorkPerThreadNs();

// One entry's estimated one-thread work: a constant plus a sum of products of the i64 words
// of its parameter binding (coefficients already in ns), or unknown. Folded when the
// executable loads: a static entry is its constant alone.
struct EntryWork {
  // Most parameter words a formula may read (DispatchWorkNs copies them to the stack).
  static constexpr uint32_t kMaxWords = WordPolynomial::kMaxWords;
  bool known = false;
  WordPolynomial ns;           // flops / kFlopsPerNs + bytes / kBytesPerNs
  uint32_t param_binding = 0;  // where the words are (when ns or profile_words read some)
  // The words any cost formula of the entry reads (known or not): what the driver reports to
  // a profiler with each dispatch (DispatchTiming::parameter_words). 0: none.
  uint32_t profile_words = 0;

  // The work for parameter words `words` (`count` of them; unused for a constant), or
  // kUnknownWorkNs: unknown, too few words, or a negative one.
  double Evaluate(const int64_t* words, size_t count) const;
};

// Estimated one-thread work per entry ordinal of `view`.
std::vector<EntryWork> EstimateEntryWork(const vm::ExecutableView& view);

// The estimated work of dispatch `cmd` with the binding table `table` (its words read from
// its parameter binding's memory now: call it once the words are written).
double DispatchWorkNs(const DispatchCommand& cmd, const std::vector<BufferRef>& table);

// Copies into `words` (room for EntryWork::kMaxWords) the parameter words that the cost
// formulas of dispatch `cmd` read, from its parameter binding's memory now; their count (0:
// none, or the binding is too short).
uint32_t ReadProfileWords(const DispatchCommand& cmd, const std::vector<BufferRef>& table, int64_t* words);

// Estimated work of copying or filling `bytes` (read and written once each).
inline double TransferWorkNs(uint64_t bytes) { return 2.0 * static_cast<double>(bytes) / kBytesPerNs; }

// A queued submission whose estimated work is at most this (and whose waits are reached, the
// queue idle) runs on the submitting thread: handing it to the queue thread and waking the
// waiting host afterwards costs two thread wake-ups, tens of microseconds on a loaded machine.
inline constexpr double kSubmitterRunsMaxWorkNs = 1000000;

// Estimated work of the recorded commands [begin, end) (a submission's, or a wave's, bound to
// `table`): their dispatches' and copies' and fills'; a repeat, a collective or a dispatch of
// unknown work makes it unknown (kUnknownWorkNs).
double CommandsWorkNs(const Command* begin, const Command* end, const std::vector<BufferRef>& table);

// Threads for a loop of `indices` indices and `work_ns` of estimated work (kUnknownWorkNs:
// unknown) on a pool of `pool_threads`: one per `min_work_per_thread_ns`, at least 1, at most
// min(pool_threads, indices).
uint32_t ThreadsForWork(double work_ns, uint64_t indices, uint32_t pool_threads,
                        double min_work_per_thread_ns);

}  // namespace hexir::hal::cpu
