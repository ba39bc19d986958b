// Kernels for the CPU driver's tests, written against dispatch_abi.h like generated code.
#include <stdint.h>
#include <time.h>

#include "hal/drivers/cpu/dispatch_abi.h"

#define EXPORT __attribute__((visibility("default")))

static uint64_t linear_id(const hexir_cpu_dispatch_state_t* d,
                          const hexir_cpu_workgroup_state_t* w) {
  return ((uint64_t)w->workgroup_id[2] * d->workgroup_count[1] + w->workgroup_id[1]) *
             d->workgroup_count[0] + w->workgroup_id[0];
}

// out[i] = a[i] + b[i] (f32). Bindings: a, b, out. Push constants: n, tile.
// Workgroup (linear id g) covers [g*tile, min(n, (g+1)*tile)).
EXPORT int add_f32(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  if (d->binding_count != 3 || d->push_constant_count != 2) return 1;
  const float* a = (const float*)d->binding_ptrs[0];
  const float* b = (const float*)d->binding_ptrs[1];
  float* out = (float*)d->binding_ptrs[2];
  uint64_t n = d->push_constants[0], tile = d->push_constants[1];
  if (d->binding_lengths[0] < n * 4 || d->binding_lengths[1] < n * 4 ||
      d->binding_lengths[2] < n * 4) {
    return 2;
  }
  uint64_t begin = linear_id(d, w) * tile;
  uint64_t end = begin + tile < n ? begin + tile : n;
  for (uint64_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
  return 0;
}

// x[i] = x[i] * k + c (i32, in place). Bindings: x. Push constants: n, k, c. One element per
// workgroup along x.
EXPORT int affine_i32(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  int32_t* x = (int32_t*)d->binding_ptrs[0];
  uint64_t i = linear_id(d, w);
  if (i < d->push_constants[0]) {
    x[i] = x[i] * (int32_t)d->push_constants[1] + (int32_t)d->push_constants[2];
  }
  return 0;
}

// out[linear id] = thread_index + 1 (u32): shows which worker ran each workgroup.
EXPORT int record_thread(const hexir_cpu_dispatch_state_t* d,
                         const hexir_cpu_workgroup_state_t* w) {
  uint32_t* out = (uint32_t*)d->binding_ptrs[0];
  uint64_t i = linear_id(d, w);
  if ((i + 1) * 4 > d->binding_lengths[0]) return 3;
  out[i] = w->thread_index + 1;
  return 0;
}

// Returns 7 in the workgroup whose x id equals push constant 0, else 0.
EXPORT int fail_at(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  return w->workgroup_id[0] == d->push_constants[0] ? 7 : 0;
}

// Reports the ABI's code push constant 1 with values (x id, 10) from the workgroup whose x id
// equals push constant 0 (a kernel whose compiled-in check failed), else 0.
EXPORT int report_at(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  if (w->workgroup_id[0] != d->push_constants[0]) return 0;
  w->error->values[0] = w->workgroup_id[0];
  w->error->values[1] = 10;
  return (int)d->push_constants[1];
}

// Binding 0 word 0 = how many binding pointers are not 64-byte aligned (the ABI promises 0).
EXPORT int count_misaligned(const hexir_cpu_dispatch_state_t* d,
                            const hexir_cpu_workgroup_state_t* w) {
  (void)w;
  uint32_t bad = 0;
  for (uint32_t i = 0; i < d->binding_count; ++i) {
    if ((uintptr_t)d->binding_ptrs[i] % 64 != 0) ++bad;
  }
  *(uint32_t*)d->binding_ptrs[0] = bad;
  return 0;
}

// Word 0 of binding i := i + 1 + push constant 0, for every binding (tests many bindings).
EXPORT int stamp_bindings(const hexir_cpu_dispatch_state_t* d,
                          const hexir_cpu_workgroup_state_t* w) {
  if (w->workgroup_id[0] != 0) return 0;
  for (uint32_t i = 0; i < d->binding_count; ++i) {
    if (d->binding_lengths[i] < 4) return 4;
    *(uint32_t*)d->binding_ptrs[i] = i + 1 + d->push_constants[0];
  }
  return 0;
}

// A two-party rendezvous: sets word `me` (push constant 0) of binding 0, then spins until word
// `other` (push constant 1) is set by another dispatch, for at most push constant 2
// milliseconds. Returns 0 when the other one arrived, 11 on timeout: two dispatches of this
// kernel only both succeed when they run at the same time, and a sequential run fails (never
// hangs).
EXPORT int rendezvous(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  (void)w;
  if (d->binding_count != 1 || d->push_constant_count != 3) return 1;
  uint32_t* flags = (uint32_t*)d->binding_ptrs[0];
  uint32_t me = d->push_constants[0], other = d->push_constants[1];
  if ((uint64_t)(me > other ? me : other) * 4 + 4 > d->binding_lengths[0]) return 2;
  __atomic_store_n(&flags[me], 1u, __ATOMIC_RELEASE);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const int64_t limit_ns = (int64_t)d->push_constants[2] * 1000000;
  for (uint64_t polls = 0;; ++polls) {
    if (__atomic_load_n(&flags[other], __ATOMIC_ACQUIRE)) return 0;
    if ((polls & 1023) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      int64_t elapsed = (int64_t)(now.tv_sec - start.tv_sec) * 1000000000 +
                        (now.tv_nsec - start.tv_nsec);
      if (elapsed > limit_ns) return 11;
    }
  }
}
