// The CPU dispatch ABI, version 1: the contract between kernels compiled by hexir-compile
// (--target=cpu) and the CPU driver. Plain C so that generated code can match it exactly.
//
// An executable is an ELF shared object exporting one C function per entry point, named by
// ExecutableDef.entry_points. The driver calls the entry once per workgroup, possibly from
// several threads at once, with distinct workgroup ids in [0, workgroup_count) per axis:
//
//   int entry(const hexir_cpu_dispatch_state_t* dispatch,
//             const hexir_cpu_workgroup_state_t* workgroup);
//
// returning 0 on success (non-zero aborts the dispatch with an error naming the entry). A
// kernel that detects bad data returns one of the HEXIR_CPU_KERNEL_* codes below after
// storing the two values its message names in *workgroup->error (the driver turns them into
// e.g. "kernel 'main_dispatch_0': index 1000000000 out of range [0, 10)"); any other
// non-zero code is reported as a number.
// Binding i is the buffer passed as the i-th binding of the dispatch: binding_ptrs[i] points
// at its first byte (64-byte aligned), binding_lengths[i] is its length in bytes. Push
// constants are 32-bit words in the order the dispatch passed them. Kernels must not retain
// any pointer after returning.
#pragma once

#include <stdint.h>

#include "hal/kernel_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HEXIR_CPU_DISPATCH_ABI_VERSION 1

typedef struct hexir_cpu_dispatch_state_t {
  uint32_t workgroup_count[3];
  uint32_t push_constant_count;
  const uint32_t* push_constants;
  uint32_t binding_count;
  uint32_t reserved;
  void* const* binding_ptrs;
  const uint64_t* binding_lengths;
} hexir_cpu_dispatch_state_t;

// Failure codes a kernel returns, with the values it stores in hexir_cpu_kernel_error_t: the
// codes of hal/kernel_status.h, shared with the CUDA driver.
#define HEXIR_CPU_KERNEL_INDEX_OUT_OF_RANGE HEXIR_KERNEL_INDEX_OUT_OF_RANGE  // index, extent
#define HEXIR_CPU_KERNEL_DIVISION_BY_ZERO HEXIR_KERNEL_DIVISION_BY_ZERO      // dividend, 0
#define HEXIR_CPU_KERNEL_DIVISION_OVERFLOW HEXIR_KERNEL_DIVISION_OVERFLOW    // INT_MIN, -1

typedef struct hexir_cpu_kernel_error_t {
  int64_t values[2];
} hexir_cpu_kernel_error_t;

typedef struct hexir_cpu_workgroup_state_t {
  uint32_t workgroup_id[3];
  uint32_t thread_index;  // which worker runs this workgroup, in [0, worker count)
  // Where a failing kernel stores its code's values (never null; one record per call).
  hexir_cpu_kernel_error_t* error;
} hexir_cpu_workgroup_state_t;

typedef int (*hexir_cpu_entry_fn_t)(const hexir_cpu_dispatch_state_t* dispatch,
                                    const hexir_cpu_workgroup_state_t* workgroup);

#ifdef __cplusplus
}  // extern "C"
#endif
