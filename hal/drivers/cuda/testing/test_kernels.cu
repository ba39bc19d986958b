// Kernels for the CUDA driver's tests and benchmark, written against the CUDA dispatch ABI v1
// (../README.md): parameters are the binding pointers, then the uint32 push constants, then
// optionally a uint32_t* status word (nonzero = this dispatch failed with that code).
// Workgroup = thread block; the block size comes from the executable's attrs.
#include <stdint.h>

__device__ __forceinline__ uint64_t LinearBlock() {
  return ((uint64_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// out[i] = a[i] + b[i] (f32). Push: n, tile. Workgroup g covers [g*tile, min(n, (g+1)*tile)).
extern "C" __global__ void add_f32(const float* a, const float* b, float* out, uint32_t n,
                                   uint32_t tile) {
  uint64_t begin = LinearBlock() * tile;
  uint64_t end = begin + tile < n ? begin + tile : n;
  for (uint64_t i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = a[i] + b[i];
}

// x[i] = x[i] * k + c (i32, in place), one element per workgroup. Push: n, k, c.
extern "C" __global__ void affine_i32(int32_t* x, uint32_t n, uint32_t k, uint32_t c) {
  uint64_t i = LinearBlock();
  if (threadIdx.x == 0 && i < n) x[i] = x[i] * (int32_t)k + (int32_t)c;
}

// Reports status 7 from the workgroup whose x id equals push 0.
extern "C" __global__ void fail_at(uint32_t fail_x, uint32_t* status) {
  if (threadIdx.x == 0 && blockIdx.x == fail_x) atomicCAS(status, 0u, 7u);
}

// Binding 0 word 0 = how many binding pointers (bindings 0..2) are not 64-byte aligned.
extern "C" __global__ void count_misaligned(uint32_t* out, const void* b1, const void* b2) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    uint32_t bad = 0;
    bad += ((uintptr_t)out % 64) != 0;
    bad += ((uintptr_t)b1 % 64) != 0;
    bad += ((uintptr_t)b2 % 64) != 0;
    out[0] = bad;
  }
}

// Two-party rendezvous: raises flags[me], then waits (at most timeout_us) for flags[other].
// flags[2 + me] = 1 when the other party was seen (both ran at the same time), else 2.
extern "C" __global__ void rendezvous(uint32_t* flags, uint32_t me, uint32_t other,
                                      uint32_t timeout_us) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  volatile uint32_t* f = flags;
  f[me] = 1;
  __threadfence_system();
  uint64_t deadline = GlobalTimerNs() + (uint64_t)timeout_us * 1000;
  uint32_t seen = 0;
  while (!(seen = f[other]) && GlobalTimerNs() < deadline) __nanosleep(1000);
  f[2 + me] = seen ? 1 : 2;
}

// Spins for `us` microseconds, then out[0] = 1.
extern "C" __global__ void spin_us(uint32_t* out, uint32_t us) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  uint64_t end = GlobalTimerNs() + (uint64_t)us * 1000;
  while (GlobalTimerNs() < end) __nanosleep(1000);
  *(volatile uint32_t*)out = 1;
}

// The benchmark's tiny dispatch: x[0] += 1 (one thread).
extern "C" __global__ void tiny_inc(uint32_t* x) {
  if (threadIdx.x == 0 && blockIdx.x == 0) x[0] += 1;
}

// The benchmark's elementwise kernel (hand-written for now, not compiler output):
// out[i] = in[i] * 2 + 1 over n4 float4s, one float4 per thread. Push: n4.
extern "C" __global__ void scale_f32x4(const float4* __restrict__ in, float4* __restrict__ out,
                                       uint32_t n4) {
  uint64_t i = LinearBlock() * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = in[i];
    out[i] = make_float4(v.x * 2.f + 1.f, v.y * 2.f + 1.f, v.z * 2.f + 1.f, v.w * 2.f + 1.f);
  }
}
