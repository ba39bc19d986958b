/* How a compiled kernel reports bad data (passes/codegen/KernelChecks.h): the failure codes
 * of both drivers and the CUDA kernel status record. Plain C so that generated code and
 * test kernels can match it exactly.
 *
 * CPU (hal/drivers/cpu/dispatch_abi.h): the entry returns the code after storing the two
 * values in its workgroup's error record; the first failure of a workgroup is kept.
 * CUDA (hal/drivers/cuda/README.md, ABI v1): a kernel declaring the optional trailing 8-byte
 * parameter receives a pointer to one hexir_kernel_status_t (zeroed before the dispatch
 * runs). A failing thread claims the record with atomicCAS(&code, 0, code); the winner (the
 * first failure of the dispatch) stores values[0] and values[1], the others store into
 * `scratch` (so the write is branch-free). The driver reads the record once the submission's
 * event completed and zeroes it. A kernel may also write only `code` (any non-zero value). */
#pragma once

#include <stdint.h>

#define HEXIR_KERNEL_INDEX_OUT_OF_RANGE 1  /* values: the index, the extent */
#define HEXIR_KERNEL_DIVISION_BY_ZERO 2    /* values: the dividend, the divisor (0) */
#define HEXIR_KERNEL_DIVISION_OVERFLOW 3   /* values: the dividend (INT_MIN), the divisor (-1) */

typedef struct hexir_kernel_status_t {
  uint32_t code; /* 0: no failure */
  uint32_t reserved;
  int64_t values[2];
  int64_t scratch; /* written by threads that lost the claim; never read */
} hexir_kernel_status_t;

#define HEXIR_KERNEL_STATUS_VALUES_OFFSET 8
#define HEXIR_KERNEL_STATUS_SCRATCH_OFFSET 24
