// RUN: not hexir-opt %s --hexir-schedule-concurrency=mode=fastest 2>&1 | FileCheck %s

// An unknown mode is an error naming it and the choices.
// CHECK: error: hexir-schedule-concurrency: unknown mode 'fastest' (expected waves or serial)
func.func @f() {
  return
}
