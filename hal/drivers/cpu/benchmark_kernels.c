// Hand-written kernels for dispatch_benchmark, built with -O3 -march=native. They stand in
// for compiler-generated code until the compiler's vectorized CPU codegen exists; they follow
// dispatch_abi.h exactly like generated code would.
#include <stdint.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "hal/drivers/cpu/dispatch_abi.h"

#define EXPORT __attribute__((visibility("default")))

// Does nothing: measures the driver's per-dispatch cost.
EXPORT int noop(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  (void)d;
  (void)w;
  return 0;
}

// y[i] = x[i] * 2 + 1 (f32). Bindings: x, y. Push constants: n, tile (elements per
// workgroup along x, a multiple of 16). Large tiles are written with streaming stores (the
// output is not read again soon; this avoids reading the destination lines first, as memcpy
// does for large copies).
EXPORT int scale_f32(const hexir_cpu_dispatch_state_t* d, const hexir_cpu_workgroup_state_t* w) {
  const float* x = (const float*)d->binding_ptrs[0];
  float* y = (float*)d->binding_ptrs[1];
  uint64_t n = d->push_constants[0], tile = d->push_constants[1];
  if (d->binding_lengths[0] < n * 4 || d->binding_lengths[1] < n * 4) return 2;
  uint64_t begin = (uint64_t)w->workgroup_id[0] * tile;
  uint64_t end = begin + tile < n ? begin + tile : n;
  uint64_t i = begin;
#if defined(__AVX__)
  // Bindings are 64-byte aligned and tile is a multiple of 16, so begin is 64-byte aligned.
  const __m256 two = _mm256_set1_ps(2.0f), one = _mm256_set1_ps(1.0f);
  for (; i + 16 <= end; i += 16) {
    __m256 a = _mm256_load_ps(x + i), b = _mm256_load_ps(x + i + 8);
#if defined(__FMA__)
    a = _mm256_fmadd_ps(a, two, one);
    b = _mm256_fmadd_ps(b, two, one);
#else
    a = _mm256_add_ps(_mm256_mul_ps(a, two), one);
    b = _mm256_add_ps(_mm256_mul_ps(b, two), one);
#endif
    _mm256_stream_ps(y + i, a);
    _mm256_stream_ps(y + i + 8, b);
  }
  _mm_sfence();
#endif
  for (; i < end; ++i) y[i] = x[i] * 2.0f + 1.0f;
  return 0;
}

// Same computation with ordinary stores (what a plain vectorizing compiler emits).
EXPORT int scale_f32_plain(const hexir_cpu_dispatch_state_t* d,
                           const hexir_cpu_workgroup_state_t* w) {
  const float* restrict x = (const float*)d->binding_ptrs[0];
  float* restrict y = (float*)d->binding_ptrs[1];
  uint64_t n = d->push_constants[0], tile = d->push_constants[1];
  if (d->binding_lengths[0] < n * 4 || d->binding_lengths[1] < n * 4) return 2;
  uint64_t begin = (uint64_t)w->workgroup_id[0] * tile;
  uint64_t end = begin + tile < n ? begin + tile : n;
  for (uint64_t i = begin; i < end; ++i) y[i] = x[i] * 2.0f + 1.0f;
  return 0;
}
